"""A local Kubernetes control plane for ``--platform kubernetes`` (docs/kubernetes.md).

etcd, kube-apiserver, kube-controller-manager and the KEDA operator + metrics adapter, built
from their Go modules (``pins``, ``build``) and started per run on the loopback range with
per-run certificates (``certs``, ``kubeconfig``, ``commands``, ``manifests``). Pure parts only
so far; the managed control plane and the node agent are planned (docs/kubernetes.md).
"""
