"""The sandbox: a wire-level double of Google Cloud that runs on this machine, so that
``plan``/``apply``/``verify``/``output``/``destroy`` work without a Google account.

Nothing here is Google Cloud and nothing talks to Google. Each piece speaks the real wire
protocol of what it replaces, so the real Terraform binary and the official client
libraries run against it unchanged:

* :mod:`~mldiag_provision.sandbox.plugin`: Terraform provider plugins (protocol 6 over
  gRPC, hashicorp/go-plugin handshake) for hashicorp/google and google-beta, serving the
  real extracted schemas (:mod:`~mldiag_provision.sandbox.schema`, sources
  ``tests/data/tf_schema/extract.py`` and ``extract_provider_config.py``); applied objects
  are JSON files in a "cloud" directory;
* :mod:`~mldiag_provision.sandbox.kube_providers`: hashicorp/kubernetes and helm plugins
  acting on the sandbox API server; :mod:`~mldiag_provision.sandbox.charts`: what the
  charts install (each chart's templates cited);
* :mod:`~mldiag_provision.sandbox.rules`: what Google and the provider refuse, each rule
  with its public source;
* :mod:`~mldiag_provision.sandbox.apiserver` and
  :mod:`~mldiag_provision.sandbox.gke_cluster`: a Kubernetes API server playing the GKE
  cluster of the cloud directory (Nodes from recorded real GKE Nodes,
  ``recorded_nodes.yaml``, each with its source);
* :mod:`~mldiag_provision.sandbox.gcs`: the Cloud Storage JSON API objects calls (list, get,
  insert, delete, with generation preconditions; ``STORAGE_EMULATOR_HOST``, or Terraform's
  ``gcs`` backend through ``storage_custom_endpoint``);
* :mod:`~mldiag_provision.sandbox.gcp_apis`: the REST APIs the live preflight asks;
* :mod:`~mldiag_provision.sandbox.mirror`: installs the plugins as a Terraform filesystem
  mirror.

Needs the ``[sandbox]`` extra (grpcio, grpcio-tools, protobuf, cryptography, msgpack).
Never imported by ``validate``, ``render`` or ``lint``.
"""
