"""Tests of ``mldiag-provision lint`` (provisioner/mldiag_provision/lint/)."""
