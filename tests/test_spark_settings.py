"""The Spark session's settings for local mode (issue 27 item 4): shuffle partitions by the cores and a
broadcast limit that keeps the month's requests from being shuffled; none for a cluster's master."""
from __future__ import annotations

import os

from ledger.allocate.spark import LOCAL_BROADCAST_BYTES, local_settings


def test_local_masters_get_partitions_by_their_cores_and_a_wider_broadcast():
    assert local_settings("local[2]") == {"spark.sql.shuffle.partitions": "4",
                                          "spark.sql.autoBroadcastJoinThreshold": str(LOCAL_BROADCAST_BYTES)}
    assert local_settings("local[4,2]")["spark.sql.shuffle.partitions"] == "8"  # local[N, retries]
    assert local_settings("local")["spark.sql.shuffle.partitions"] == "2"  # one thread: at least 2
    assert local_settings("local[*]")["spark.sql.shuffle.partitions"] == str(max(2, 2 * (os.cpu_count() or 1)))


def test_a_cluster_keeps_its_own_settings():
    for master in ("spark://head:7077", "yarn", "k8s://https://api:6443", "localhost", "local[x]", "", None):
        assert local_settings(master) == {}, master
