"""Staff pages: the admin overview, per-item and per-annotator drill-downs, adjudication.

Statistics over all ratings (agreement with a bootstrap, disagreement per item) cost seconds at a
few thousand ratings, so they are cached under the store's ``ratings_version``: a page load
recomputes them only after a rating or adjudication changed since the last computation.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from flask import Flask, Response, abort, g, redirect, render_template, request, url_for

from evalpipe.annotation.schema import AXES, read_tasks, sample_tasks_path, to_long_frame
from evalpipe.annotation.web import export as export_mod
from evalpipe.annotation.web.disagreement import item_disagreement
from evalpipe.annotation.web.forms import parse_rating_form, rating_values
from evalpipe.annotation.web.store import (
    MAX_COMMENT_CHARS,
    Store,
    comment_too_long,
    to_annotations,
)
from evalpipe.errors import InputError

log = logging.getLogger(__name__)


class VersionCache:
    """Values computed from the ratings, kept until the ratings change.

    Parameters
    ----------
    version:
        Returns the current state key (``Store.ratings_version``).

    ``get`` recomputes synchronously when a value is missing or stale. ``get_stale_ok`` returns
    a stale value at once (with ``fresh=False``) and recomputes it in a background thread, one
    at a time per name: while annotators keep saving, the admin page stays fast and is at most
    one computation behind.
    """

    def __init__(self, version: Callable[[], Any]) -> None:
        self._version = version
        self._lock = threading.Lock()
        self._values: dict[str, tuple[Any, Any]] = {}
        self._running: dict[str, threading.Thread] = {}

    def get(self, name: str, compute: Callable[[], Any]) -> Any:
        key = self._version()
        with self._lock:
            hit = self._values.get(name)
            if hit is not None and hit[0] == key:
                return hit[1]
        value = compute()
        with self._lock:
            self._values[name] = (key, value)
        return value

    def get_stale_ok(self, name: str, compute: Callable[[], Any]) -> tuple[Any, bool]:
        """``(value, fresh)``; a stale value is refreshed in the background."""
        key = self._version()
        with self._lock:
            hit = self._values.get(name)
            if hit is not None and hit[0] == key:
                return hit[1], True
            if hit is not None:
                if name not in self._running:
                    worker = threading.Thread(
                        target=self._refresh, args=(name, key, compute), daemon=True
                    )
                    self._running[name] = worker
                    worker.start()
                return hit[1], False
        return self.get(name, compute), True

    def _refresh(self, name: str, key: Any, compute: Callable[[], Any]) -> None:
        try:
            value = compute()
            with self._lock:
                self._values[name] = (key, value)
        except Exception as exc:  # keep serving the stale value; retry on the next request
            log.warning("refreshing %s failed: %s", name, exc)
        finally:
            with self._lock:
                self._running.pop(name, None)

    def wait(self, timeout: float = 30.0) -> None:
        """Wait for background refreshes (tests, benchmarks)."""
        with self._lock:
            workers = list(self._running.values())
        for w in workers:
            w.join(timeout)


def fmt_stat(value: Any, reason: str | None = None) -> str:
    """A statistic for display: two decimals, or ``n/a (reason)`` when undefined."""
    if value is None:
        return f"n/a ({reason})" if reason else "n/a"
    return f"{value:.2f}"


def agreement_rows(
    store: Store, *, min_kappa: float, target_kappa: float, n_boot: int = 200
) -> tuple[list[dict[str, Any]], str | None]:
    """Agreement per axis over the independent ratings so far, as display rows.

    Returns
    -------
    tuple[list[dict], str | None]
        One row per axis, or a message instead when statistics cannot be computed yet.
    """
    ratings = store.ratings()
    if not ratings:
        return [], "no ratings yet"
    try:
        from evalpipe.annotation.agreement import agreement_report

        long = to_long_frame(to_annotations(ratings))
        report = agreement_report(
            long, n_boot=n_boot, seed=0, min_kappa=min_kappa, target_kappa=target_kappa
        )
    except Exception as exc:  # the admin page must render even when statistics cannot
        log.warning("agreement not available: %s", exc)
        return [], f"agreement not available: {exc}"
    rows = []
    for axis, e in report["axes"].items():

        def why(stat: str, e: dict[str, Any] = e) -> str | None:
            # ``undefined_reason`` is {statistic: why} (agreement_report); older reports and
            # special cases carry a single ``note``.
            reasons = e.get("undefined_reason")
            if isinstance(reasons, dict) and reasons.get(stat):
                return str(reasons[stat])
            if isinstance(reasons, str) and reasons:
                return reasons
            return e.get("note") or "too few items rated by two annotators"

        ci = e.get("kappa_ci") or [None, None]
        rows.append(
            {
                "axis": axis,
                "items with 2+ ratings": e["n_items"],
                "kappa (quadratic)": fmt_stat(e["kappa"], why("kappa")),
                "95% CI": "n/a" if ci[0] is None else f"{fmt_stat(ci[0])} – {fmt_stat(ci[1])}",
                "alpha (ordinal)": fmt_stat(e["alpha"], why("alpha")),
                "AC2": fmt_stat(e["ac2"], why("ac2")),
                "exact": fmt_stat(e["raw_agreement"], why("raw_agreement")),
                "within ±1": fmt_stat(e["within_one_agreement"], why("within_one_agreement")),
                "status": e["status"],
            }
        )
    return rows, None


def register(app: Flask, store: Store, config: Any, require_login: Callable[[], Any]) -> None:
    """Add the staff routes to ``app``."""
    cache = VersionCache(store.ratings_version)

    def staff(check: str) -> Any:
        if (resp := require_login()) is not None:
            return resp
        allowed = g.user.role == "admin" or (check == "adjudicate" and g.user.can_adjudicate)
        if not allowed:
            abort(403)
        return None

    def compute_disagreement() -> list[dict[str, Any]]:
        ratings = store.ratings()
        if not ratings:
            return []
        return item_disagreement(to_long_frame(to_annotations(ratings)))

    def disagreement() -> list[dict[str, Any]]:
        return cache.get("disagreement", compute_disagreement)

    @app.get("/admin")
    def admin() -> Any:
        if (resp := staff("admin")) is not None:
            return resp
        people = [p for p in store.annotators() if p["role"] == "annotator"]
        medians, _fresh = cache.get_stale_ok("median_seconds", lambda: _median_seconds(store))
        attempts: dict[str, list[dict[str, Any]]] = {}
        for a in store.qual_attempts():
            attempts.setdefault(a["annotator_id"], []).append(a)
        flags: dict[str, int] = {}
        for n in store.notes():
            if n["flag"]:
                flags[n["annotator_id"]] = flags.get(n["annotator_id"], 0) + 1
        idle = store.idle_seconds()
        released = store.released()
        for p in people:
            p["idle_hours"] = idle.get(p["id"], 0.0) / 3600
            p["released"] = p["id"] in released
            p["median_seconds"] = medians.get(p["id"])
            p["attempts"] = attempts.get(p["id"], [])
            p["flags"] = flags.get(p["id"], 0)
        (agreement, agreement_error), agreement_fresh = cache.get_stale_ok(
            "agreement",
            lambda: agreement_rows(
                store, min_kappa=config.min_kappa, target_kappa=config.target_kappa
            ),
        )
        rows, _fresh = cache.get_stale_ok("disagreement", compute_disagreement)
        disputed = [d for d in rows if d["max_range"] > 0]
        item_ids = store.item_ids()
        sample_ids = _sample_task_ids()
        return render_template(
            "admin.html",
            sample_items=sum(i in sample_ids for i in item_ids),
            people=people,
            agreement=agreement,
            agreement_error=agreement_error,
            agreement_fresh=agreement_fresh,
            items=len(item_ids),
            total=store.count_ratings(),
            disputed=len(disputed),
            adjudicated=len(store.adjudications()),
            fmt_stat=fmt_stat,
        )

    @app.get("/admin/annotator/<annotator_id>")
    def admin_annotator(annotator_id: str) -> Any:
        if (resp := staff("admin")) is not None:
            return resp
        person = next((p for p in store.annotators() if p["id"] == annotator_id), None)
        if person is None:
            abort(404)
        ratings = store.ratings(annotator_id=annotator_id)
        everyone = store.ratings()
        # Mean of the others on the same item and axis: a per-item view of systematic bias.
        others: dict[tuple[str, str], list[int]] = {}
        for r in everyone:
            if r.annotator_id != annotator_id:
                for a in AXES:
                    others.setdefault((r.item_id, a), []).append(r.scores[a])
        rows = []
        dist = {a: [0] * 5 for a in AXES}
        for r in ratings:
            for a in AXES:
                dist[a][r.scores[a] - 1] += 1
            rows.append(
                {
                    "rating": r,
                    "others": {
                        a: (
                            round(sum(v) / len(v), 1) if (v := others.get((r.item_id, a))) else None
                        )
                        for a in AXES
                    },
                }
            )
        kappas, _fresh = cache.get_stale_ok("annotator_kappas", lambda: _annotator_kappas(store))
        notes = [n for n in store.notes() if n["annotator_id"] == annotator_id]
        return render_template(
            "admin_annotator.html",
            person=person,
            rows=rows,
            dist=dist,
            kappas=kappas.get(annotator_id, {}),
            attempts=store.qual_attempts(annotator_id),
            notes=notes,
            fmt_stat=fmt_stat,
        )

    @app.get("/admin/items")
    def admin_items() -> Any:
        if (resp := staff("adjudicate")) is not None:
            return resp
        return redirect(url_for("adjudicate_list"))

    @app.get("/review/<path:item_id>")
    def review_item(item_id: str) -> Any:
        """Read-only view of one item with every rating side by side (staff only)."""
        if (resp := staff("adjudicate")) is not None:
            return resp
        return _item_page(item_id, editable=False)

    @app.get("/adjudicate")
    def adjudicate_list() -> Any:
        if (resp := staff("adjudicate")) is not None:
            return resp
        rows = disagreement()
        adjudicated = {a.item_id: a for a in store.adjudications()}
        show_all = request.args.get("all") == "1"
        shown = rows if show_all else [d for d in rows if d["max_range"] > 0]
        return render_template(
            "adjudicate_list.html",
            rows=shown,
            total=len(rows),
            adjudicated=adjudicated,
            show_all=show_all,
        )

    @app.route("/adjudicate/<path:item_id>", methods=["GET", "POST"])
    def adjudicate_item(item_id: str) -> Any:
        if (resp := staff("adjudicate")) is not None:
            return resp
        if request.method == "POST":
            scores, confidence, errors = parse_rating_form(request.form)
            note = request.form.get("note", "")
            # The same limit and message as an annotator's comment; the note is never cut.
            n_chars = len(note.strip())
            note_error = (
                comment_too_long(n_chars, what="Note") if n_chars > MAX_COMMENT_CHARS else None
            )
            if not errors and note_error is None:
                try:
                    store.save_adjudication(item_id, g.user.id, scores, confidence, note)
                except InputError as exc:
                    errors = [str(exc)]
            if not errors and note_error is None:
                done = {a.item_id for a in store.adjudications()}
                order = [d["id"] for d in disagreement() if d["max_range"] > 0]
                later = [i for i in order if i not in done]
                target = (
                    url_for("adjudicate_item", item_id=later[0])
                    if later
                    else url_for("adjudicate_list")
                )
                return redirect(target, code=303)
            values = {k: request.form.get(k, "") for k in request.form}
            return _item_page(
                item_id,
                editable=True,
                errors=errors,
                values=values,
                note=note,
                note_error=note_error,
            )
        return _item_page(item_id, editable=True)

    def _item_page(
        item_id: str,
        *,
        editable: bool,
        errors: list[str] | None = None,
        values: dict[str, str] | None = None,
        note: str | None = None,
        note_error: str | None = None,
    ) -> Any:
        task = store.task(item_id)
        if task is None:
            abort(404)
        ratings = store.item_ratings(item_id)
        adj = store.adjudication(item_id)
        if values is None:
            values = rating_values(adj.scores, adj.confidence) if adj else {}
        info = next((d for d in disagreement() if d["id"] == item_id), None)
        notes = store.notes(item_id=item_id)
        window = max(0, int(config.context_window))
        context = task.context[-window:] if window else []
        html = render_template(
            "review_item.html",
            task=task,
            context=context,
            hidden_context=len(task.context) - len(context),
            ratings=ratings,
            adjudication=adj,
            info=info,
            notes=notes,
            editable=editable,
            errors=errors or [],
            values=values,
            note=note if note is not None else (adj.note if adj else ""),
            note_error=note_error,
            max_comment=MAX_COMMENT_CHARS,
        )
        return html, (400 if errors or note_error else 200)

    @app.get("/admin/export.jsonl")
    def admin_export() -> Any:
        if (resp := staff("admin")) is not None:
            return resp
        salt = config.rater_salt
        records = export_mod.export_records(store, salt=salt) + export_mod.adjudication_records(
            store, salt=salt
        )
        body = export_mod.to_jsonl(records)
        return Response(
            body,
            mimetype="application/x-ndjson",
            headers={"Content-Disposition": 'attachment; filename="annotations.jsonl"'},
        )


def _sample_task_ids() -> set[str]:
    """Ids of the bundled sample tasks (for trying the app; not a campaign's items)."""
    try:
        return {t.id for t in read_tasks(sample_tasks_path())}
    except (OSError, InputError):
        return set()


def _median_seconds(store: Store) -> dict[str, float]:
    """Median active seconds per rated item, per annotator."""
    timings: dict[str, list[float]] = {}
    for r in store.ratings():
        timings.setdefault(r.annotator_id, []).append(r.active_ms / 1000)
    return {who: round(sorted(t)[len(t) // 2], 1) for who, t in timings.items()}


def _annotator_kappas(store: Store) -> dict[str, dict[str, float | None]]:
    from evalpipe.annotation.agreement import annotator_kappas

    ratings = store.ratings()
    if not ratings:
        return {}
    try:
        return annotator_kappas(to_long_frame(to_annotations(ratings)))
    except Exception as exc:  # shown as n/a, the page still renders
        log.warning("annotator kappas not available: %s", exc)
        return {}
