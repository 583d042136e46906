#!/usr/bin/env bash
# Regenerates testdata/zookeeper/sample: starts Debian's ZooKeeper 3.8.0
# (testutil/zkserver.go: zoo.cfg with preAllocSize=64, snapCount=20,
# 127.0.0.1 on a free port), writes Pulsar-like nodes with go-zookeeper
# (formats/zkdisk/live_test.go pulsarWorkload), records every node the live
# server shows in expected.json, stops the server with SIGTERM and copies its
# version-2/ files here.
set -euo pipefail
cd "$(dirname "$0")/../.."
go test ./formats/zkdisk -run '^TestLiveServerEqualsOfflineView$' -count=1 -update-zk-samples -v
ls -l testdata/zookeeper/sample/version-2
