// etcd server built from the published go.etcd.io/etcd modules (see image/kube/binaries.sh).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
