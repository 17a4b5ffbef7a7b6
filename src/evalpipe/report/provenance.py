"""The last section: what produced the report (models, prompt style, params, commit, the
content hash of every input, the inputs that were missing)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from evalpipe.report import html as h
from evalpipe.report.data import ReportData


def provenance_section(data: ReportData) -> str:
    """What produced the report: models, prompt style, params, commit, input versions."""
    prov = data.provenance
    params = prov.get("params") or {}
    rows = [
        {
            "what": "models (slug: identity of the scored outputs)",
            "value": ", ".join(
                f"{m}: {ids[m]}" if (ids := prov.get("model_ids") or {}).get(m) else str(m)
                for m in prov.get("models") or []
            )
            or "n/a",
        },
        {"what": "prompt style", "value": (params.get("prompt") or {}).get("style", "n/a")},
        {
            "what": "git commit",
            "value": prov.get("commit")
            or "not recorded (the DVC stage leaves it out so the file depends only on its "
            "inputs; the input hashes below identify the data)",
        },
    ]
    if prov.get("label"):
        rows.insert(0, {"what": "revision", "value": prov["label"]})
    body = h.table([h.text("what", "item"), h.text("value", "value")], rows)
    if params:
        body += "<h3>Parameters</h3>" + h.table(
            [h.text("key", "params.yaml key"), h.text("value", "value")],
            [
                {"key": key, "value": json.dumps(value, ensure_ascii=False, sort_keys=True)}
                for key, value in _flatten_params(params)
            ],
        )
    inputs = prov.get("inputs") or {}
    if inputs:
        body += "<h3>Data versions (content hashes of the inputs)</h3>" + h.table(
            [h.text("path", "input"), h.text("md5", "md5")],
            [{"path": p, "md5": v} for p, v in sorted(inputs.items())],
        )
    if data.missing:
        body += "<h3>Missing inputs</h3>" + "".join(
            h.missing(f"{name}: {msg}") for name, msg in sorted(data.missing.items())
        )
    return body


def _flatten_params(params: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for key in sorted(params):
        value = params[key]
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            out.extend(_flatten_params(value, dotted + "."))
        else:
            out.append((dotted, value))
    return out
