// Pin of the KEDA operator and metrics adapter (built by scripts/build-kube; read by
// pytest_lagscale/kube/pins.py). A wrapper module: `go build -mod=mod
// github.com/kedacore/keda/v2/cmd/operator` and `.../cmd/adapter` resolve through it.
//
// Replace directives of a dependency are ignored by the go command, so the one KEDA's own
// go.mod carries is repeated here (without it the build picks nexus-proto-annotations v0.1.0,
// which KEDA avoids: "temporal.io/api and temporal.io/sdk use this package but it doesn't have
// license yet in 0.1.0"). scripts/build-kube compares this file's replace lines with the
// downloaded keda go.mod's after the build and fails when they differ.
//
// To move to another KEDA release: change the require line, then copy the replace block of
// that release's go.mod here.
module lagscale.dev/kube/keda

go 1.26.0

require github.com/kedacore/keda/v2 v2.21.0

replace github.com/nexus-rpc/nexus-proto-annotations v0.1.0 => github.com/nexus-rpc/nexus-proto-annotations v0.1.1-0.20260629224316-835bd8d49cb4
