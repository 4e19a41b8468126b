"""KV-23: RocksDB's info log is no part of a store; every other file counts."""

from __future__ import annotations

from pathlib import Path

from kstate.storage_files import directory_digest, is_rocksdb_info_log, store_digest


def test_only_rocksdb_info_log_files_are_left_out(tmp_path: Path) -> None:
    db = tmp_path / "app" / "0_0" / "rocksdb" / "store"
    db.mkdir(parents=True)
    for name in ("LOG", "LOG.old.1733123456789012", "CURRENT", "MANIFEST-000005", "000012.log", "LOGS", "LOG.old.x"):
        (db / name).write_text(name)
    digest = store_digest(tmp_path)
    assert set(directory_digest(tmp_path)) - set(digest) == {"app/0_0/rocksdb/store/LOG",
                                                             "app/0_0/rocksdb/store/LOG.old.1733123456789012"}
    assert is_rocksdb_info_log("x/LOG") and not is_rocksdb_info_log("x/LOG.old.") and not is_rocksdb_info_log("x/OLOG")
