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
