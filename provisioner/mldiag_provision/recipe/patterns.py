"""Regular expressions the recipe model uses; pydantic-free so error messages can use them."""

# DNS-1123 label: what Kubernetes names, GKE cluster names and GCP ids have in common.
DNS_LABEL = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"

# Compute Engine resource names (reservations): RFC 1035, at most 63 characters.
GCE_NAME = r"^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$"
# Environment variable names as Kubernetes validated them before 1.30 (C identifiers plus
# '-' and '.'): k8s.io/apimachinery validation.IsEnvVarName.
ENV_NAME = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
# Container image references, after the distribution reference grammar
# (github.com/distribution/reference, reference.go): lowercase repository path, optional
# registry port, tag and digest.
IMAGE_REF = (r"^[a-z0-9]+(?:[._-][a-z0-9]+)*(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*"
             r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?$")

# RFC 3339 times in UTC, as GKE's maintenance policy takes them (start/end of a window or an
# exclusion: https://cloud.google.com/kubernetes-engine/docs/concepts/maintenance-windows-and-exclusions).
RFC3339_UTC = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"
# The RFC 5545 recurrences a maintenance window accepts here: daily, or weekly on given days.
RECURRENCE = r"^FREQ=(DAILY|WEEKLY;BYDAY=(MO|TU|WE|TH|FR|SA|SU)(,(MO|TU|WE|TH|FR|SA|SU))*)$"
# A duration in one unit (queued provisioning's maxRunDuration).
DURATION = r"^[1-9][0-9]{0,6}[smhd]$"
# Cloud Storage bucket names, the shape only (catalog/data/names.yaml gcsBucket has the rest).
BUCKET = r"^[a-z0-9][-_.a-z0-9]{1,220}[a-z0-9]$"
# One Cloud Storage FUSE mount option (key or key=value; gcsfuse's own flags).
MOUNT_OPTION = r"^[-_.:=/a-zA-Z0-9]+$"
# An absolute path inside the container.
ABSOLUTE_PATH = r"^/[^\x00]*$"
# A DNS-1123 subdomain (Kubernetes object names such as a PriorityClass).
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
# A Compute Engine disk type (pd-balanced, hyperdisk-balanced, ...).
DISK_TYPE = r"^[a-z][-a-z0-9]{0,62}$"
