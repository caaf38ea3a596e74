"""Verify a live cluster against what a recipe's stack promised (``mldiag-provision verify``)."""
