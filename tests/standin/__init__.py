"""Offline stand-in for hashicorp/google and hashicorp/google-beta (test infrastructure).

A real Terraform provider plugin that serves the real provider schemas and keeps "cloud"
objects in local files; see :mod:`standin.plugin` and :mod:`standin.mirror`.
"""
