// Pin of kube-apiserver and kube-controller-manager (built by scripts/build-kube; read by
// pytest_lagscale/kube/pins.py). Not a module anyone imports: a wrapper whose only job is to
// make `go build -mod=mod k8s.io/kubernetes/cmd/<binary>` resolve.
//
// k8s.io/kubernetes requires its staging modules (k8s.io/api, k8s.io/client-go, ...) at
// v0.0.0 and points them at ./staging/src/... through its go.work, which a dependency's
// go.work cannot do for us; so each of the 31 staging modules it requires is replaced by its published
// copy at the matching v0.<minor>.<patch>. The list is the one k8s.io/kubernetes v1.36.3's
// go.mod requires at v0.0.0; scripts/build-kube checks it against the downloaded go.mod
// after the build and fails when they differ.
//
// To move to another Kubernetes release: change the require line and every v0.36.3 below,
// nothing else (the build cache directory is keyed by this file's content).
module lagscale.dev/kube/kubernetes

go 1.26.0

require k8s.io/kubernetes v1.36.3

replace (
	k8s.io/api => k8s.io/api v0.36.3
	k8s.io/apiextensions-apiserver => k8s.io/apiextensions-apiserver v0.36.3
	k8s.io/apimachinery => k8s.io/apimachinery v0.36.3
	k8s.io/apiserver => k8s.io/apiserver v0.36.3
	k8s.io/cli-runtime => k8s.io/cli-runtime v0.36.3
	k8s.io/client-go => k8s.io/client-go v0.36.3
	k8s.io/cloud-provider => k8s.io/cloud-provider v0.36.3
	k8s.io/cluster-bootstrap => k8s.io/cluster-bootstrap v0.36.3
	k8s.io/code-generator => k8s.io/code-generator v0.36.3
	k8s.io/component-base => k8s.io/component-base v0.36.3
	k8s.io/component-helpers => k8s.io/component-helpers v0.36.3
	k8s.io/controller-manager => k8s.io/controller-manager v0.36.3
	k8s.io/cri-api => k8s.io/cri-api v0.36.3
	k8s.io/cri-client => k8s.io/cri-client v0.36.3
	k8s.io/cri-streaming => k8s.io/cri-streaming v0.36.3
	k8s.io/csi-translation-lib => k8s.io/csi-translation-lib v0.36.3
	k8s.io/dynamic-resource-allocation => k8s.io/dynamic-resource-allocation v0.36.3
	k8s.io/endpointslice => k8s.io/endpointslice v0.36.3
	k8s.io/externaljwt => k8s.io/externaljwt v0.36.3
	k8s.io/kms => k8s.io/kms v0.36.3
	k8s.io/kube-aggregator => k8s.io/kube-aggregator v0.36.3
	k8s.io/kube-controller-manager => k8s.io/kube-controller-manager v0.36.3
	k8s.io/kube-proxy => k8s.io/kube-proxy v0.36.3
	k8s.io/kube-scheduler => k8s.io/kube-scheduler v0.36.3
	k8s.io/kubectl => k8s.io/kubectl v0.36.3
	k8s.io/kubelet => k8s.io/kubelet v0.36.3
	k8s.io/metrics => k8s.io/metrics v0.36.3
	k8s.io/mount-utils => k8s.io/mount-utils v0.36.3
	k8s.io/pod-security-admission => k8s.io/pod-security-admission v0.36.3
	k8s.io/sample-apiserver => k8s.io/sample-apiserver v0.36.3
	k8s.io/streaming => k8s.io/streaming v0.36.3
)
