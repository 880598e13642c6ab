"""A local Kubernetes control plane for ``--platform kubernetes`` (docs/kubernetes.md).

etcd, kube-apiserver, kube-controller-manager and the KEDA operator + metrics adapter, built
from their Go modules (``pins``, ``build``) and started per run on the loopback range with
per-run certificates (``certs``, ``kubeconfig``, ``commands``, ``manifests``, ``apply``).
``control_plane`` starts them in order and stops them in reverse; ``node_agent`` (its pure part
``node_sync``, ``pod_replica``) runs the Deployment's pods as local replica processes; ``shadow`` and
``conformance`` hold the embedded HPA against the real one; ``cluster`` serves a cluster given
by ``--kubeconfig``; ``cli`` is ``lagscale kube up``. The map of modules is in docs/kubernetes.md.
"""
