"""Phase `data_args`: `data_args.txt` and `summary.json` from the pack outputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import storage


@dataclass(frozen=True)
class WriteDataArgs:
    outputs: list[str]
    out_dir: str
    plan_path: str
    prefix_dir: str  # out_dir as the trainer will see it (absolute, made on the driver)

    def __call__(self) -> dict[str, Any]:
        records = [storage.read_json(path) for path in self.outputs]
        shards = [dict(s, component=r["component"]) for r in records for s in r["shards"]]
        total = sum(s["tokens"] for s in shards)
        lines = [f"{s['tokens'] / max(total, 1):.12f} "
                 f"{storage.join(self.prefix_dir, s['prefix'].rsplit('/', 1)[-1])}" for s in shards
                 if s["tokens"]]
        storage.write_bytes_atomic(storage.join(self.out_dir, "data_args.txt"),
                                   ("\n".join(lines) + "\n").encode())
        plan = storage.read_json(self.plan_path)
        summary = {"dtype": plan["dtype"], "tokens": total, "data_args": "data_args.txt",
                   "docs": {r["component"]: r["docs"] for r in records},
                   "shards": [{**s, "prefix": s["prefix"].rsplit("/", 1)[-1]} for s in shards]}
        storage.write_json_atomic(storage.join(self.out_dir, "summary.json"), summary)
        return {"shards": len(shards), "tokens": total}
