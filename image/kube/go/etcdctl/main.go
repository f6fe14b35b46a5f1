// etcdctl built from the published go.etcd.io/etcd modules (see image/kube/binaries.sh).
package main

import "go.etcd.io/etcd/etcdctl/v3/ctlv3"

func main() { ctlv3.MustStart() }
