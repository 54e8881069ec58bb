//go:build tools

// Package tools pins etcd (the module root of go.etcd.io/etcd/server/v3 is package main).
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
)
