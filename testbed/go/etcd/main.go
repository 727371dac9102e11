// Command etcd starts etcd's own server entry point (etcdmain), as upstream's binary does.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
