"""The Flask application: login, one dialogue pair per page, admin view, export download.

Security model: no sign-up (accounts come from the CLI), CSRF tokens on every form (Flask-WTF),
Jinja2 autoescaping for all dialogue text (model output may contain HTML), a strict
Content-Security-Policy with no inline script, session cookies HttpOnly + SameSite=Lax, and blind
access: an annotator can reach only the items assigned to them and sees only their own ratings.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

from flask import (
    Flask,
    Response,
    abort,
    flash,
    g,
    redirect,
    render_template,
    request,
    session,
    url_for,
)
from flask_wtf.csrf import CSRFError, CSRFProtect
from werkzeug.exceptions import TooManyRequests

from evalpipe.annotation import guidelines as gl
from evalpipe.annotation.schema import AXES, LABEL_NAMES
from evalpipe.annotation.web import review as review_mod
from evalpipe.annotation.web import training as training_mod
from evalpipe.annotation.web.forms import (
    confidence_levels,
    form_values,
    int_or_zero,
    parse_rating_form,
    rating_values,
)
from evalpipe.annotation.web.ratelimit import LoginLimiter
from evalpipe.annotation.web.store import Store
from evalpipe.errors import InputError

log = logging.getLogger(__name__)


# Letter that jumps to each axis (digits are taken by scores; s/n/p/g by actions).
AXIS_KEYS: dict[str, str] = {"social": "a", "avoidant": "v", "mechanical": "m", "self": "e"}

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "font-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)


@dataclass(frozen=True)
class AppConfig:
    """What the app needs besides the database.

    Parameters
    ----------
    secret_key:
        Signs sessions and CSRF tokens (from EVALPIPE_SECRET_KEY or a secret file).
    context_window:
        How many preceding turns of context to show (params ``annotation.context_window``).
    min_confidence:
        Shown in the UI as the threshold below which a rating counts as unsure.
    min_kappa, target_kappa:
        Thresholds for the admin view's agreement status.
    secure_cookies:
        Send the session cookie only over HTTPS (set when served behind TLS).
    login_attempts_per_address, login_attempts_overall, login_window_s:
        Failed logins allowed per client address and in total within the window; beyond them
        the login answers 429 without checking the token (see ``ratelimit``).
    """

    secret_key: str
    context_window: int = 7
    min_confidence: float = 0.7
    min_kappa: float = 0.60
    target_kappa: float = 0.80
    secure_cookies: bool = False
    login_attempts_per_address: int = 10
    login_attempts_overall: int = 100
    login_window_s: float = 300.0
    require_qualification: bool = True


def create_app(store: Store, config: AppConfig) -> Flask:
    """Build the annotation app around an open :class:`Store`.

    Parameters
    ----------
    store:
        The database (items, accounts, assignments, ratings).
    config:
        Secret key and display settings.

    Returns
    -------
    Flask
        A WSGI app; serve it with waitress (``evalpipe annotate serve``).
    """
    app = Flask(__name__)
    app.config.update(
        SECRET_KEY=config.secret_key,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=config.secure_cookies,
        SESSION_COOKIE_NAME="evalpipe_annotate",
        PERMANENT_SESSION_LIFETIME=timedelta(hours=12),
        WTF_CSRF_TIME_LIMIT=12 * 3600,
        MAX_CONTENT_LENGTH=64 * 1024,
        TEMPLATES_AUTO_RELOAD=False,
    )
    app.jinja_env.autoescape = True
    CSRFProtect(app)
    app.extensions["evalpipe_store"] = store
    app.extensions["evalpipe_config"] = config
    limiter = LoginLimiter(
        per_address=config.login_attempts_per_address,
        overall=config.login_attempts_overall,
        window_s=config.login_window_s,
    )

    @app.after_request
    def security_headers(resp: Response) -> Response:
        resp.headers["Content-Security-Policy"] = CSP
        resp.headers["X-Content-Type-Options"] = "nosniff"
        resp.headers["X-Frame-Options"] = "DENY"
        resp.headers["Referrer-Policy"] = "same-origin"
        if request.endpoint != "static":
            resp.headers["Cache-Control"] = "no-store"
        return resp

    @app.errorhandler(CSRFError)
    def csrf_error(exc: CSRFError) -> tuple[str, int]:
        return render_template(
            "error.html",
            title="Form expired",
            message="The form's security token was missing or stale. "
            "Go back, reload the page and submit again.",
        ), 400

    @app.errorhandler(404)
    def not_found(exc: Exception) -> tuple[str, int]:
        return render_template(
            "error.html",
            title="Not found",
            message="There is no such page, or it is not yours to see.",
        ), 404

    @app.errorhandler(500)
    def server_error(exc: Exception) -> tuple[str, int]:
        log.exception("unhandled error on %s", request.path)
        try:
            return render_template(
                "error.html",
                title="Something went wrong",
                message="The server could not handle this request. Your saved ratings are safe; "
                "go back and try again, and tell the coordinator if it happens again.",
            ), 500
        except Exception:  # the page must not fail the same way as the request did
            return "Internal server error", 500

    @app.errorhandler(429)
    def too_many(exc: Exception) -> Any:
        resp = Response(
            render_template(
                "error.html",
                title="Too many attempts",
                message="Too many failed sign-ins. Wait a few minutes and try again.",
            ),
            status=429,
            mimetype="text/html",
        )
        resp.headers["Retry-After"] = str(int(getattr(exc, "retry_after", 60)))
        return resp

    @app.errorhandler(403)
    def forbidden(exc: Exception) -> tuple[str, int]:
        return render_template(
            "error.html", title="Not allowed", message="This page is for the administrator."
        ), 403

    @app.before_request
    def load_user() -> Any:
        g.user = None
        if request.endpoint in {"static", "healthz", "favicon"}:
            return None
        uid, sid = session.get("uid"), session.get("sid")
        if uid:
            user = store.annotator(uid)
            # A session is valid only while the server holds it (logout deletes it), and the
            # fingerprint ties it to the current token (resetting the token logs out).
            if (
                user is not None
                and isinstance(sid, str)
                and store.session_user(sid) == uid
                and session.get("fp") == store.session_fingerprint(uid)
            ):
                g.user = user
            else:
                session.clear()
        return None

    @app.context_processor
    def globals_for_templates() -> dict[str, Any]:
        return {
            "user": g.get("user"),
            "axes": AXES,
            "axis_keys": AXIS_KEYS,
            "label_names": LABEL_NAMES,
            "axis_names": gl.AXIS_NAMES,
            "definitions": gl.AXIS_DEFINITIONS,
            "anchors_ja": gl.AXIS_ANCHORS_JA,
            "anchors_en": gl.AXIS_ANCHORS_EN,
            "conf_levels": confidence_levels(config.min_confidence),
            "min_confidence": config.min_confidence,
        }

    def require_login() -> Any:
        if g.user is None:
            return redirect(url_for("login", next=request.path))
        return None

    @app.get("/favicon.ico")
    def favicon() -> Response:
        return Response(status=204)

    @app.get("/healthz")
    def healthz() -> Response:
        return Response("ok\n", mimetype="text/plain")

    @app.route("/login", methods=["GET", "POST"])
    def login() -> Any:
        error = None
        if request.method == "POST":
            address = request.remote_addr or "?"
            slot, retry_after = limiter.acquire(address)
            if slot is None:
                exc = TooManyRequests()
                exc.retry_after = retry_after  # type: ignore[attr-defined]
                raise exc
            uid = request.form.get("annotator_id", "").strip()
            token = request.form.get("token", "").strip()
            user = store.authenticate(uid, token) if uid and token else None
            if user is None:
                error = "Unknown annotator ID or wrong token."
            else:
                limiter.release(address, slot)
                old = session.get("sid")
                if isinstance(old, str):
                    store.end_session(old)
                session.clear()
                session.permanent = True
                session["uid"] = user.id
                session["sid"] = store.create_session(user.id)
                session["fp"] = store.session_fingerprint(user.id)
                target = safe_next(request.args.get("next", "")) or url_for("home")
                return redirect(target, code=303)
        return render_template("login.html", error=error), (401 if error else 200)

    @app.post("/logout")
    def logout() -> Any:
        sid = session.get("sid")
        if isinstance(sid, str):
            store.end_session(sid)
        session.clear()
        return redirect(url_for("login"), code=303)

    @app.get("/")
    def home() -> Any:
        if (resp := require_login()) is not None:
            return resp
        if g.user.role == "admin":
            return redirect(url_for("admin"))
        if g.user.role == "adjudicator":
            return redirect(url_for("adjudicate_list"))
        if (step := training_mod.gate(store, g.user.id, config)) is not None:
            return redirect(step)
        pos = store.next_position(store.queue(g.user.id))
        if pos is None:
            return redirect(url_for("done"))
        return redirect(url_for("item", position=pos))

    @app.get("/done")
    def done() -> Any:
        if (resp := require_login()) is not None:
            return resp
        queue = store.queue(g.user.id)
        # "All done" only when it is true: otherwise back to the next open item.
        if not queue or not all(s.rated for s in queue):
            return redirect(url_for("home"))
        return render_template(
            "done.html", queue=queue, rated=sum(s.rated for s in queue), assigned=len(queue)
        )

    @app.route("/item/<int:position>", methods=["GET", "POST"])
    def item(position: int) -> Any:
        if (resp := require_login()) is not None:
            return resp
        if not g.user.rates_items:
            # Staff have no queue: /item/N is the N-th item in task order, read-only.
            ids = store.item_ids()
            if not 1 <= position <= len(ids):
                abort(404)
            return redirect(url_for("review_item", item_id=ids[position - 1]))
        if (step := training_mod.gate(store, g.user.id, config)) is not None:
            return redirect(step)
        item_id = store.slot(g.user.id, position)
        if item_id is None:
            abort(404)
        errors: list[str] = []
        values: dict[str, Any] = {}
        note = store.note(g.user.id, item_id) or {"comment": "", "flag": False}
        if request.method == "POST":
            active_ms = int_or_zero(request.form.get("active_ms"))
            action = request.form.get("action", "save")
            scores, confidence, errors = parse_rating_form(request.form)
            if any("unknown axis" in e for e in errors):
                return _render_item(position, item_id, errors=errors, values={}, note=note)
            note = {
                "comment": request.form.get("comment", "")[:2000],
                "flag": request.form.get("flag") == "1",
            }
            stored = store.note(g.user.id, item_id) or {"comment": "", "flag": False}
            if (stored["comment"], stored["flag"]) != (note["comment"].strip(), note["flag"]):
                store.save_note(g.user.id, item_id, comment=note["comment"], flag=note["flag"])
            if action == "draft":
                store.save_draft(g.user.id, item_id, form_values(request.form))
                return Response(status=204)
            if action == "skip":
                store.save_draft(g.user.id, item_id, form_values(request.form))
                store.skip(g.user.id, item_id, active_ms=active_ms)
                return _go_next(store, g.user.id, position)
            if not errors:
                try:
                    changed = store.save_rating(
                        g.user.id, item_id, scores, confidence, active_ms=active_ms
                    )
                except InputError as exc:
                    errors = [str(exc)]
                else:
                    if action == "save_stay":
                        flash("Saved." if changed else "No change.")
                        return redirect(url_for("item", position=position), code=303)
                    return _go_next(store, g.user.id, position)
            values = form_values(request.form)
        return _render_item(position, item_id, errors=errors, values=values, note=note)

    def _render_item(
        position: int,
        item_id: str,
        *,
        errors: list[str],
        values: dict[str, Any],
        note: dict[str, Any],
    ) -> Any:
        task = store.task(item_id)
        if task is None:
            abort(404)
        rating = store.rating(g.user.id, item_id)
        draft = store.draft(g.user.id, item_id) if not values else {}
        if draft:
            values = draft
        elif rating is not None and not values:
            values = rating_values(rating.scores, rating.confidence)
        queue = store.queue(g.user.id)
        positions = [s.position for s in queue]
        idx = positions.index(position)
        window = max(0, int(config.context_window))
        context = task.context[-window:] if window else []
        html = render_template(
            "annotate.html",
            task=task,
            context=context,
            hidden_context=len(task.context) - len(context),
            position=position,
            index=idx + 1,
            queue=queue,
            rated=sum(s.rated for s in queue),
            assigned=len(queue),
            prev_pos=positions[idx - 1] if idx > 0 else None,
            next_pos=positions[idx + 1] if idx + 1 < len(positions) else None,
            rating=rating,
            draft=bool(draft),
            values=values,
            note=note,
            errors=errors,
        )
        return html, (400 if errors else 200)

    @app.get("/guidelines")
    def guidelines() -> Any:
        if (resp := require_login()) is not None:
            return resp

        def text(name: str) -> str:
            try:
                return gl.guideline_text(name)
            except (FileNotFoundError, OSError):
                return ""

        try:
            examples = gl.examples()
        except (FileNotFoundError, OSError, ValueError):
            examples = []
        return render_template(
            "guidelines.html",
            markers=gl.AXIS_MARKERS,
            axis_text=text("axis_definitions.md"),
            edge_text=text("edge_cases.md"),
            examples=examples,
        )

    training_mod.register(app, store, config, require_login)
    review_mod.register(app, store, config, require_login)
    return app


def safe_next(target: str) -> str | None:
    """``target`` if it is a path on this site, else None (no open redirect through ``?next=``).

    Browsers drop tabs and newlines from URLs and treat ``\\`` like ``/``, so ``/\t/evil.example``
    would become ``//evil.example``, another host; any control character, space or backslash
    disqualifies a target, as does anything with a scheme or host.

    >>> safe_next("/item/3"), safe_next("/\t/evil.example"), safe_next("//evil.example")
    ('/item/3', None, None)
    """
    if not target or not target.startswith("/") or target.startswith("//"):
        return None
    if any(ord(ch) <= 0x20 or ord(ch) == 0x7F for ch in target) or "\\" in target:
        return None
    parts = urlsplit(target)
    if parts.scheme or parts.netloc:
        return None
    return target


def _go_next(store: Store, annotator_id: str, position: int) -> Any:
    pos = store.next_position(store.queue(annotator_id), after=position)
    if pos is None:
        return redirect(url_for("done"), code=303)
    return redirect(url_for("item", position=pos), code=303)
