// Pin of etcd (built by scripts/build-kube; read by pytest_lagscale/kube/pins.py). A wrapper
// module: `go build -mod=mod go.etcd.io/etcd/server/v3` builds the etcd binary (the package
// main of the server module wraps etcdmain.Main). `go install ...@v3.6.16` cannot be used:
// etcd's server go.mod carries replace directives, which `go install pkg@version` refuses.
module lagscale.dev/kube/etcd

go 1.26.0

require go.etcd.io/etcd/server/v3 v3.6.16
