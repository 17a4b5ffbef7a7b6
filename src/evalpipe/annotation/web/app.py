"""The Flask application: login, one dialogue pair per page, admin view, export download.

Security model: no sign-up (accounts come from the CLI), CSRF tokens on every form (Flask-WTF),
Jinja2 autoescaping for all dialogue text (model output may contain HTML), a strict
Content-Security-Policy with no inline script, session cookies HttpOnly + SameSite=Lax, and blind
access: an annotator can reach only the items assigned to them and sees only their own ratings.
"""

from __future__ import annotations

import logging
import threading
import time
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
from werkzeug.middleware.proxy_fix import ProxyFix

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
from evalpipe.annotation.web.store import MAX_COMMENT_CHARS, Store, comment_too_long
from evalpipe.annotation.web.store.db import utc_now_ms
from evalpipe.errors import InputError
from evalpipe.params_schema import default_of

log = logging.getLogger(__name__)


# Letter that jumps to each axis (digits are taken by scores; s/n/p/g by actions).
AXIS_KEYS: dict[str, str] = {"social": "a", "avoidant": "v", "mechanical": "m", "self": "e"}

# The whole request for the rating and adjudication forms (room for a pasted document as a
# comment or note, so it is refused with a message and kept in the form); other forms are limited
# by MAX_CONTENT_LENGTH.
RATING_FORM_BYTES = 4 * 1024 * 1024
BIG_FORMS = {"item", "adjudicate_item"}

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
    login_attempts_per_pair, login_attempts_per_account, login_attempts_unknown, login_window_s:
        Failed logins allowed per (client address, annotator id) and per annotator id before
        each further attempt waits (a growing delay), and in total for ids that do not exist,
        within the window; a refused attempt answers 429 with ``Retry-After`` without checking
        the token (see ``ratelimit``). One id's failures never refuse another id.
    login_base_delay_s, login_max_delay_s:
        The first wait past a login limit, doubled with each further failure up to the maximum.
    trusted_proxy_hops:
        0 (default): the client address is the TCP peer and ``X-Forwarded-For`` is ignored.
        N > 0: the app runs behind N reverse proxies that each append to ``X-Forwarded-For``
        (and set ``X-Forwarded-Proto``), and takes the client address from there. Set it only
        when every request goes through those proxies, else a client can pick its own address.
    require_qualification:
        Annotators must pass the qualification test before they get items.
    review_step:
        Saving a rating first shows it for review; it is stored when confirmed.
    autosave_seconds:
        The page saves a draft of a changed form this often (0: only when leaving the item).
    session_timeout_minutes:
        A session with no request for this long is signed out (0: never).
    rater_salt:
        The campaign's salt: ratings leaving the app (the admin's download) name annotators by
        their pseudonym (``annotation.pseudonyms``). None: login ids (tests of the app alone).
    top_up, idle_hours, raise_coverage, seed:
        An annotator with no unrated item left gets up to ``top_up`` more (0: never): first the
        unrated items of annotators idle for ``idle_hours`` or more (0: never move items), then,
        with ``raise_coverage``, items beyond ``overlap``, fewest raters first
        (``assignment.top_up``; ``seed`` breaks ties).
    """

    secret_key: str
    context_window: int = default_of("annotation.context_window")
    min_confidence: float = default_of("annotation.min_confidence")
    min_kappa: float = default_of("annotation.min_kappa")
    target_kappa: float = default_of("annotation.target_kappa")
    secure_cookies: bool = False
    login_attempts_per_pair: int = 10
    login_attempts_per_account: int = 50
    login_attempts_unknown: int = 100
    login_window_s: float = 300.0
    login_base_delay_s: float = 1.0
    login_max_delay_s: float = 60.0
    trusted_proxy_hops: int = 0
    require_qualification: bool = default_of("annotation.require_qualification")
    top_up: int = 10
    idle_hours: float = 72.0
    raise_coverage: bool = True
    seed: int = default_of("seed")
    rater_salt: str | None = None
    review_step: bool = default_of("annotation.review_step")
    autosave_seconds: int = default_of("annotation.autosave_seconds")
    session_timeout_minutes: float = default_of("annotation.session_timeout_minutes")


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

    @app.before_request
    def rating_form_limit() -> None:
        # The rating and adjudication forms may carry an over-long comment or note: parse them
        # (up to RATING_FORM_BYTES) so the text is refused with a message and kept in the form,
        # instead of a bare 413. Registered before CSRFProtect, whose check reads the form first.
        if request.endpoint in BIG_FORMS and request.method == "POST":
            request.max_content_length = RATING_FORM_BYTES
            request.max_form_memory_size = RATING_FORM_BYTES

    CSRFProtect(app)
    app.extensions["evalpipe_store"] = store
    app.extensions["evalpipe_config"] = config
    limiter = LoginLimiter(
        per_pair=config.login_attempts_per_pair,
        per_account=config.login_attempts_per_account,
        unknown_overall=config.login_attempts_unknown,
        window_s=config.login_window_s,
        base_delay_s=config.login_base_delay_s,
        max_delay_s=config.login_max_delay_s,
    )
    if config.trusted_proxy_hops < 0:
        raise InputError(f"trusted_proxy_hops: expected 0 or more, got {config.trusted_proxy_hops}")
    if config.trusted_proxy_hops:
        # Only here does X-Forwarded-For count: with no proxy in front, any client could set it.
        app.wsgi_app = ProxyFix(  # type: ignore[method-assign]
            app.wsgi_app, x_for=config.trusted_proxy_hops, x_proto=config.trusted_proxy_hops
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
        wait = int(getattr(exc, "retry_after", 60))
        resp = Response(
            render_template(
                "error.html",
                title="Too many attempts",
                message=f"Too many failed sign-ins with this annotator ID. Wait {wait:,} "
                f"second{'s' if wait != 1 else ''} and try again: the wait doubles with each "
                f"further failure, up to {config.login_max_delay_s:,.0f} seconds. Other IDs "
                "can still sign in.",
            ),
            status=429,
            mimetype="text/html",
        )
        resp.headers["Retry-After"] = str(wait)
        return resp

    @app.errorhandler(413)
    def too_large(exc: Exception) -> tuple[str, int]:
        endpoint = request.endpoint or ""
        limit = RATING_FORM_BYTES if endpoint in BIG_FORMS else app.config["MAX_CONTENT_LENGTH"]
        return render_template(
            "error.html", title="Too much text", message=too_large_message(endpoint, limit)
        ), 413

    @app.errorhandler(403)
    def forbidden(exc: Exception) -> tuple[str, int]:
        return render_template(
            "error.html", title="Not allowed", message="This page is for the administrator."
        ), 403

    # Last request per session (monotonic seconds), for the idle timeout; in memory, so a
    # restart gives everyone a fresh allowance rather than costing a database write per request.
    last_seen: dict[str, float] = {}
    seen_lock = threading.Lock()
    idle_limit_s = config.session_timeout_minutes * 60

    def idle_expired(sid: str) -> bool:
        now = time.monotonic()
        with seen_lock:
            before = last_seen.get(sid)
            if idle_limit_s > 0 and before is not None and now - before > idle_limit_s:
                last_seen.pop(sid, None)
                return True
            last_seen[sid] = now
        return False

    @app.before_request
    def load_user() -> Any:
        g.user = None
        if request.endpoint in {"static", "healthz", "favicon"}:
            return None
        uid, sid = session.get("uid"), session.get("sid")
        if uid and isinstance(sid, str) and idle_expired(sid):
            store.end_session(sid)
            session.clear()
            flash(
                f"Signed out after {config.session_timeout_minutes:g} minutes without activity. "
                "Your saved ratings and drafts are kept."
            )
            return None
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
            uid = request.form.get("annotator_id", "").strip()[:200]
            token = request.form.get("token", "").strip()
            known = store.annotator(uid) is not None
            slot, retry_after = limiter.acquire(address, uid, known=known)
            if slot is None:
                exc = TooManyRequests()
                exc.retry_after = int(retry_after)  # whole seconds, as the 429 handler sends them
                raise exc
            user = store.authenticate(uid, token) if uid and token else None
            if user is None:
                error = "Unknown annotator ID or wrong token."
            else:
                limiter.release(address, uid, slot, known=known)
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
        if pos is None and config.top_up > 0:
            store.assign_more(
                g.user.id,
                batch=config.top_up,
                idle_after_s=config.idle_hours * 3600 if config.idle_hours > 0 else None,
                raise_coverage=config.raise_coverage,
                seed=config.seed,
            )
            pos = store.next_position(store.queue(g.user.id))
        if pos is None:
            return redirect(url_for("done"))
        return redirect(url_for("item", position=pos))

    @app.get("/done")
    def done() -> Any:
        if (resp := require_login()) is not None:
            return resp
        if not g.user.rates_items:
            return redirect(url_for("home"))
        queue = store.queue(g.user.id)
        # Back to the queue only when an item is open: "/" sends here only when none is, so
        # the two never bounce between each other (an empty queue gets a page of its own).
        if not all(s.rated for s in queue):
            return redirect(url_for("home"))
        return render_template(
            "done.html", queue=queue, rated=sum(s.rated for s in queue), assigned=len(queue)
        )

    # max: an id beyond SQLite's integer range is a 404, not an OverflowError (500).
    @app.route("/item/<int(max=2147483647):position>", methods=["GET", "POST"])
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
        if item_id is None and store.was_dropped(g.user.id, position):
            if request.method == "GET":
                return render_template(
                    "error.html",
                    title="Item handed to a colleague",
                    message="While you were away this item went to a colleague, so it is no "
                    "longer in your queue. If you still have it open in another tab, saving "
                    "there keeps your rating.",
                ), 410
            # A page still open on it posts: the item comes back and the rating is stored.
            item_id = store.reclaim(g.user.id, position)
            if item_id is not None and store.slot(g.user.id, position) != item_id:
                moved = next(s.position for s in store.queue(g.user.id) if s.item_id == item_id)
                return redirect(url_for("item", position=moved), code=307)
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
                "comment": request.form.get("comment", ""),
                "flag": request.form.get("flag") == "1",
            }
            # An over-long comment is refused with a message, never cut, and kept: in the form
            # to shorten, and in the item's draft (so moving to another item loses nothing).
            # The rating sent with it is still saved.
            n_chars = len(note["comment"].strip())
            comment_error = comment_too_long(n_chars) if n_chars > MAX_COMMENT_CHARS else None
            kept: dict[str, str] = {}
            if comment_error is not None:
                kept = {"comment": note["comment"], "flag": "1" if note["flag"] else ""}
            stored = store.note(g.user.id, item_id) or {"comment": "", "flag": False}
            changed_note = (stored["comment"], stored["flag"]) != (
                note["comment"].strip(),
                note["flag"],
            )
            if comment_error is None and changed_note:
                store.save_note(g.user.id, item_id, comment=note["comment"], flag=note["flag"])
            if action == "draft":
                store.save_draft(g.user.id, item_id, form_values(request.form) | kept)
                return Response(status=204)
            if action == "skip":
                store.save_draft(g.user.id, item_id, form_values(request.form) | kept)
                if comment_error is not None:
                    return _render_item(
                        position,
                        item_id,
                        errors=[],
                        values=form_values(request.form),
                        note=note,
                        comment_error=comment_error + " The item was not skipped.",
                    )
                store.skip(g.user.id, item_id, active_ms=active_ms)
                return _go_next(store, g.user.id, position)
            if not errors and config.review_step and request.form.get("confirmed") != "1":
                # The review step: show the rating; it is stored when confirmed. Until then
                # it is a draft, so "Edit" (or leaving) loses nothing.
                store.save_draft(g.user.id, item_id, form_values(request.form) | kept)
                return render_template(
                    "review.html",
                    position=position,
                    scores=scores,
                    confidence=confidence,
                    note=note,
                    fields=[
                        (k, v)
                        for k, v in request.form.items(multi=True)
                        if k not in {"csrf_token", "confirmed"}
                    ],
                )
            if not errors:
                try:
                    changed = store.save_rating(
                        g.user.id,
                        item_id,
                        scores,
                        confidence,
                        active_ms=active_ms,
                        started_at=request.form.get("opened_at"),
                        browser_meta=browser_meta(request),
                    )
                except InputError as exc:
                    errors = [str(exc)]
                else:
                    if comment_error is not None:
                        store.save_draft(g.user.id, item_id, kept)
                        return _render_item(
                            position,
                            item_id,
                            errors=[],
                            values={},
                            note=note,
                            comment_error=comment_error,
                            rating_saved=True,
                        )
                    if action == "save_stay":
                        flash("Saved." if changed else "No change.")
                        return redirect(url_for("item", position=position), code=303)
                    return _go_next(store, g.user.id, position)
            values = form_values(request.form)
            if comment_error is not None:
                store.save_draft(g.user.id, item_id, values | kept)
            return _render_item(
                position,
                item_id,
                errors=errors,
                values=values,
                note=note,
                comment_error=comment_error,
            )
        return _render_item(position, item_id, errors=errors, values=values, note=note)

    def _render_item(
        position: int,
        item_id: str,
        *,
        errors: list[str],
        values: dict[str, Any],
        note: dict[str, Any],
        comment_error: str | None = None,
        rating_saved: bool = False,
    ) -> Any:
        task = store.task(item_id)
        if task is None:
            abort(404)
        rating = store.rating(g.user.id, item_id)
        draft = store.draft(g.user.id, item_id)
        # A draft may hold an over-long comment: shown again, flagged, until it is shortened.
        draft_comment = draft.pop("comment", None)
        draft_flag = draft.pop("flag", "") == "1"
        status = 400 if errors or comment_error else 200
        if draft_comment is not None and comment_error is None:
            note = {"comment": draft_comment, "flag": draft_flag}
            n_chars = len(draft_comment.strip())
            if n_chars > MAX_COMMENT_CHARS:
                comment_error = (
                    comment_too_long(n_chars) + " It is kept here as a draft until you do."
                )
        if not values and draft:
            values = draft
        elif not values and rating is not None:
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
            draft=bool(draft) or draft_comment is not None,
            values=values,
            note=note,
            errors=errors,
            comment_error=comment_error,
            rating_saved=rating_saved,
            max_comment=MAX_COMMENT_CHARS,
            opened_at=utc_now_ms(),
            autosave_seconds=config.autosave_seconds,
        )
        return html, status

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


_OS_MARKERS = (
    ("Windows", "Windows"),
    ("Android", "Android"),
    ("iPhone", "iOS"),
    ("iPad", "iOS"),
    ("Mac OS X", "macOS"),
    ("CrOS", "ChromeOS"),
    ("Linux", "Linux"),
)


def os_from_user_agent(user_agent: str) -> str:
    """The operating system a User-Agent names (``""`` when none is recognised).

    >>> os_from_user_agent("Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0")
    'Linux'
    """
    return next((name for marker, name in _OS_MARKERS if marker in user_agent), "")


def browser_meta(req: Any) -> dict[str, str]:
    """The logging spec's ``browser_meta`` of a rating request: the User-Agent, its operating
    system and the viewport the page's script reported (``WIDTHxHEIGHT``)."""
    agent = req.headers.get("User-Agent", "")
    return {
        "user_agent": agent,
        "os": os_from_user_agent(agent),
        "viewport": req.form.get("viewport", ""),
    }


def too_large_message(endpoint: str, limit_bytes: int) -> str:
    """What the 413 page says, in terms of the form the request came from.

    >>> too_large_message("login", 65536).split(".")[0]
    'The sign-in form sent more than 64 kB, so nothing was checked'
    """
    size = f"{limit_bytes // 1024:,} kB"
    if endpoint == "login":
        return (
            f"The sign-in form sent more than {size}, so nothing was checked. An annotator ID "
            "and a token are short: go back, check what was pasted into the two fields, and "
            "sign in again."
        )
    if endpoint == "adjudicate_item":
        return (
            f"What you sent is larger than {size} (a very long note?), so the final rating was "
            "not saved. Go back: your rating and note are still in the form. Shorten the note "
            f"to {MAX_COMMENT_CHARS:,} characters and save again."
        )
    if endpoint == "item":
        return (
            f"What you sent is larger than {size} (a very long comment?), so nothing was saved. "
            "Go back: your ratings are still in the form. Shorten the comment to "
            f"{MAX_COMMENT_CHARS:,} characters and save again."
        )
    return (
        f"What you sent is larger than {size}, so nothing was saved. Go back: your answers "
        "are still in the form; submit them again."
    )


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
    if pos is None:  # "/" may find more work (assign_more) before it says "all done"
        return redirect(url_for("home"), code=303)
    return redirect(url_for("item", position=pos), code=303)
