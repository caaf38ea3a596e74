terraform {
  required_version = ">= 1.5"

  required_providers {
    google = {
      source  = "hashicorp/google"
      version = ">= 8.0, < 9.0"
    }
    # The cluster is managed through google-beta: in the 8.7.0 provider schemas,
    # `managed_machine_learning_diagnostics_config` exists on google_container_cluster
    # only in hashicorp/google-beta, not in hashicorp/google (evidence:
    # tests/data/tf_schema/google-8.7.0-subset.json vs google-beta-8.7.0-subset.json).
    google-beta = {
      source  = "hashicorp/google-beta"
      version = ">= 8.0, < 9.0"
    }
  }
}
