"""`evalpipe annotate`: human annotation collection, the web app and the spreadsheet round trip.

    evalpipe annotate add-annotator ann_001      # prints a login token, once
    evalpipe annotate serve --port 8080          # http://127.0.0.1:8080
    evalpipe annotate release ann_001            # a dropout's unrated items -> the team
    evalpipe annotate export                     # -> data/raw/annotations/batch_NNN.jsonl
    evalpipe annotate template --output ann.xlsx # offline annotators
    evalpipe annotate import ann.xlsx --annotator ann_004

Then ``dvc repro agreement`` picks up the new batch. Walkthrough: docs/annotation-web.md.
"""

from __future__ import annotations

import ipaddress
import json
import logging
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from evalpipe import atomic
from evalpipe.annotation.gold import read_gold, score_gold
from evalpipe.annotation.pseudonyms import pseudonymise_id, rater_salt
from evalpipe.commands import fail_cleanly, params_option
from evalpipe.errors import InputError
from evalpipe.params import load_params
from evalpipe.paths import ProjectPaths

PATHS = ProjectPaths()

db_option = click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False),
    default=str(PATHS.annotation_db),
    show_default=True,
    help="The annotation database (SQLite).",
)


overlap_option = click.option(
    "--overlap",
    type=int,
    default=None,
    help="Annotators per item (default: params annotation.overlap).",
)


def tasks_option(help: str | None = None) -> Any:
    """``--tasks`` (the annotation task set), with a help text that says what the command uses
    it for."""
    return click.option(
        "--tasks",
        "tasks_path",
        type=click.Path(dir_okay=False),
        default=str(PATHS.annotation_tasks),
        show_default=True,
        help=help,
    )


def out_dir_option(help: str | None = None) -> Any:
    """``--out-dir``, the folder of raw annotation batches."""
    return click.option(
        "--out-dir",
        type=click.Path(file_okay=False),
        default=str(PATHS.raw_annotations),
        show_default=True,
        help=help,
    )


def _annotation_params(params_path: str) -> dict[str, Any]:
    params = load_params(params_path)
    cfg = dict(params["annotation"])
    cfg["seed"] = int(params["seed"])
    return cfg


def _overlap(overlap: int | None, cfg: dict[str, Any]) -> int:
    """The ``--overlap`` given, else params annotation.overlap."""
    return int(overlap if overlap is not None else cfg["overlap"])


def _open_store(db_path: str, *, must_exist: bool = False, synchronous: str = "full") -> Any:
    from evalpipe.annotation.web.store import Store

    if must_exist and not Path(db_path).exists():
        raise InputError(
            f"{db_path}: no annotation database here (start with `serve` or "
            f"`add-annotator`, or pass --db)"
        )
    return Store(db_path, synchronous=synchronous)


def _batch_pairs(path: Path) -> set[tuple[str, str]]:
    """The (id, annotator_id) pairs of ``path`` if it is an annotation batch, else nothing.

    A file counts as a batch only if every non-empty line is a valid spec record: task files,
    notes, logs, binary files and anything else that merely ends in ``.jsonl`` are unrelated and
    cannot clash with an export.
    """
    from evalpipe.annotation.schema import validate_annotation

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    pairs: set[tuple[str, str]] = set()
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            return set()
        if validate_annotation(obj, where=f"{path}:{lineno}"):
            return set()
        pairs.add((obj["id"], obj["annotator_id"]))
    return pairs


def _existing_pairs(directory: Path, *, exclude: Path | None = None) -> dict[tuple[str, str], str]:
    """(id, annotator_id) -> batch file name, over the annotation batches already in ``directory``."""
    seen: dict[tuple[str, str], str] = {}
    if not directory.is_dir():
        return seen
    for path in sorted(directory.glob("*.jsonl")):
        if not path.is_file() or (exclude is not None and path.resolve() == exclude.resolve()):
            continue
        for pair in sorted(_batch_pairs(path)):
            seen.setdefault(pair, path.name)
    return seen


def _refuse_duplicates(
    records: list[dict[str, Any]], directory: Path, *, exclude: Path | None = None
) -> None:
    seen = _existing_pairs(directory, exclude=exclude)
    clashes = [
        (r["id"], r["annotator_id"], seen[(r["id"], r["annotator_id"])])
        for r in records
        if (r["id"], r["annotator_id"]) in seen
    ]
    if clashes:
        listed = "\n  ".join(
            f"id {i!r}, annotator {a!r}: already in {f}" for i, a, f in clashes[:50]
        )
        raise InputError(
            f"{len(clashes)} rating(s) already exported to {directory}; nothing was "
            f"written (remove the older batch file if this one replaces it):\n  {listed}"
        )


@click.group()
def main() -> None:
    """Collect human sycophancy ratings: web app, accounts, export, backup, spreadsheets."""


@main.command()
@tasks_option("Tasks JSONL (the task input format).")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Interface to listen on. Keep 127.0.0.1 unless behind a TLS reverse proxy.",
)
@click.option("--port", default=8080, show_default=True, type=int)
@db_option
@click.option(
    "--secret-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="File holding the session secret (else env EVALPIPE_SECRET_KEY).",
)
@click.option("--threads", default=8, show_default=True, type=int, help="waitress worker threads.")
@click.option(
    "--synchronous",
    type=click.Choice(["full", "normal"]),
    default="full",
    show_default=True,
    help="SQLite durability: full fsyncs every rating before the "
    "response (survives power loss); normal survives a killed server, not a power cut.",
)
@overlap_option
@click.option(
    "--secure-cookies/--no-secure-cookies",
    default=False,
    show_default=True,
    help="Send the session cookie over HTTPS only (when served behind TLS).",
)
@click.option(
    "--login-limit",
    nargs=4,
    type=(int, int, int, float),
    default=(10, 50, 100, 300.0),
    show_default=True,
    metavar="PER_ADDRESS_AND_ID PER_ID UNKNOWN_IDS SECONDS",
    help="Failed logins per (client address, annotator id) and per annotator id before each "
    "further attempt waits, failed logins in total for ids that do not exist (then refused), "
    "and the time window they are counted in.",
)
@click.option(
    "--login-delay",
    nargs=2,
    type=(click.FloatRange(min=0), click.FloatRange(min=0)),
    default=(1.0, 60.0),
    show_default=True,
    metavar="FIRST MAX",
    help="Seconds a sign-in waits past a login limit: FIRST, doubled with each further "
    "failure, up to MAX.",
)
@click.option(
    "--trusted-proxies",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Reverse proxies in front of the app that set X-Forwarded-For; the client address is "
    "taken from that header only when this is 1 or more (docs/annotation-web.md).",
)
@click.option(
    "--top-up",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Items an annotator with nothing left to rate gets at a time (0: none): unrated items "
    "of idle annotators first, then items beyond the overlap.",
)
@click.option(
    "--idle-hours",
    type=click.FloatRange(min=0),
    default=72.0,
    show_default=True,
    help="Unrated items of an annotator inactive this long may move to one who needs work "
    "(0: never).",
)
@click.option(
    "--raise-coverage/--no-raise-coverage",
    default=True,
    show_default=True,
    help="Top-ups may give items more raters than the overlap.",
)
@click.option(
    "--require-qualification/--no-require-qualification",
    default=None,
    help="Annotators must pass the qualification test before they get items "
    "(default: params annotation.require_qualification, else on).",
)
@click.option(
    "--gold",
    "gold_path",
    default=None,
    help="Gold items (JSONL: a task plus reference {axis: 1-5} per line) hidden in the queues "
    "(default: params annotation.gold_file).",
)
@click.option(
    "--gold-share",
    type=float,
    default=None,
    help="Share of each queue that is gold items (default: params annotation.gold_share).",
)
@click.option(
    "--review-step/--no-review-step",
    default=None,
    help="Show the rating for review before it is saved (default: params annotation.review_step).",
)
@click.option(
    "--autosave-seconds",
    type=int,
    default=None,
    help="Save a draft of a changed form this often; 0: never (default: params "
    "annotation.autosave_seconds).",
)
@click.option(
    "--session-timeout-minutes",
    type=float,
    default=None,
    help="Sign out after this long without a request; 0: never (default: params "
    "annotation.session_timeout_minutes).",
)
@params_option
@fail_cleanly
def serve(
    tasks_path: str,
    host: str,
    port: int,
    db_path: str,
    secret_file: str | None,
    threads: int,
    synchronous: str,
    overlap: int | None,
    secure_cookies: bool,
    login_limit: tuple[int, int, int, float],
    login_delay: tuple[float, float],
    trusted_proxies: int,
    top_up: int,
    idle_hours: float,
    raise_coverage: bool,
    require_qualification: bool | None,
    gold_path: str | None,
    gold_share: float | None,
    review_step: bool | None,
    autosave_seconds: int | None,
    session_timeout_minutes: float | None,
    params_path: str,
) -> None:
    """Serve the annotation web app with waitress (not Flask's development server)."""
    import waitress

    from evalpipe.annotation.schema import read_tasks
    from evalpipe.annotation.web import AppConfig, create_app
    from evalpipe.annotation.web.auth import load_secret_key

    cfg = _annotation_params(params_path)
    secret = load_secret_key(secret_file)
    tasks = read_tasks(tasks_path)
    store = _open_store(db_path, synchronous=synchronous)
    added, _known = store.load_tasks(tasks)
    gold_path = gold_path or cfg["gold_file"]
    if gold_path:
        store.load_gold(read_gold(gold_path))
    share = float(cfg["gold_share"] if gold_share is None else gold_share)
    if not 0 <= share < 1:
        raise InputError(f"--gold-share: expected a share 0 <= x < 1, got {share}")
    overlap = _overlap(overlap, cfg)
    assigned = store.rebalance(overlap=overlap, seed=cfg["seed"], gold_share=share)
    app = create_app(
        store,
        AppConfig(
            secret_key=secret,
            context_window=int(cfg["context_window"]),
            min_confidence=float(cfg["min_confidence"]),
            min_kappa=float(cfg["min_kappa"]),
            target_kappa=float(cfg["target_kappa"]),
            secure_cookies=secure_cookies,
            login_attempts_per_pair=login_limit[0],
            login_attempts_per_account=login_limit[1],
            login_attempts_unknown=login_limit[2],
            login_window_s=login_limit[3],
            login_base_delay_s=login_delay[0],
            login_max_delay_s=login_delay[1],
            trusted_proxy_hops=trusted_proxies,
            top_up=top_up,
            idle_hours=idle_hours,
            raise_coverage=raise_coverage,
            seed=cfg["seed"],
            rater_salt=rater_salt(PATHS.root),
            review_step=bool(cfg["review_step"] if review_step is None else review_step),
            autosave_seconds=int(
                cfg["autosave_seconds"] if autosave_seconds is None else autosave_seconds
            ),
            session_timeout_minutes=float(
                cfg["session_timeout_minutes"]
                if session_timeout_minutes is None
                else session_timeout_minutes
            ),
            require_qualification=bool(
                require_qualification
                if require_qualification is not None
                else cfg["require_qualification"]
            ),
        ),
    )
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        click.echo(
            f"warning: listening on {host}: anyone who can reach this address can try to "
            f"log in; put it behind HTTPS and pass --secure-cookies",
            err=True,
        )
    people = [p for p in store.annotators() if p["role"] == "annotator"]
    click.echo(
        f"annotate serve: {len(tasks)} tasks ({added} new), {len(people)} annotators, "
        f"overlap {overlap} ({assigned} new assignments), db {db_path} -> "
        f"http://{host}:{port}/",
        err=False,
    )
    logging.getLogger("waitress").setLevel(logging.WARNING)
    waitress.serve(
        app,
        host=host,
        port=port,
        threads=threads,
        ident="evalpipe",
        # Behind trusted proxies the app reads X-Forwarded-For itself (ProxyFix with that many
        # hops); otherwise waitress drops such headers before the app sees them.
        clear_untrusted_proxy_headers=not trusted_proxies,
    )


@main.command("add-annotator")
@click.argument("annotator_id")
@click.option(
    "--admin",
    is_flag=True,
    help="An admin account: sees progress and agreement, downloads the export, adjudicates, "
    "gets no items.",
)
@click.option(
    "--adjudicator",
    is_flag=True,
    help="An adjudicator account: settles disagreements (final ratings with a note), gets no items.",
)
@click.option("--reset-token", is_flag=True, help="Issue a new token for an existing account.")
@db_option
@overlap_option
@params_option
@fail_cleanly
def add_annotator(
    annotator_id: str,
    admin: bool,
    adjudicator: bool,
    reset_token: bool,
    db_path: str,
    overlap: int | None,
    params_path: str,
) -> None:
    """Create an account and print its login token (shown once; only a hash is stored)."""
    store = _open_store(db_path)
    if reset_token:
        token = store.reset_token(annotator_id)
        click.echo(f"new token for {annotator_id} (the old one no longer works):")
        click.echo(token)
        return
    if admin and adjudicator:
        raise InputError("--admin and --adjudicator: choose one role")
    role = "admin" if admin else "adjudicator" if adjudicator else "annotator"
    token = store.add_annotator(annotator_id, role=role)
    cfg = _annotation_params(params_path)
    new = store.rebalance(
        overlap=_overlap(overlap, cfg), seed=cfg["seed"], gold_share=float(cfg["gold_share"])
    )
    detail = "" if role != "annotator" else f", {new} assignments added"
    click.echo(f"created {role} {annotator_id}{detail}; their login token (shown once):")
    click.echo(token)


@main.command("waive-qualification")
@click.argument("annotator_id")
@click.option("--reason", required=True, help="Why (recorded with the waiver and exported).")
@db_option
@fail_cleanly
def waive_qualification(annotator_id: str, reason: str, db_path: str) -> None:
    """Let an annotator rate without taking the qualification test (e.g. they qualified in an
    earlier campaign); recorded as a passed attempt marked as waived, with the reason."""
    from evalpipe.annotation.schema import AXES

    store = _open_store(db_path, must_exist=True)
    person = store.annotator(annotator_id)
    if person is None or person.role != "annotator":
        raise InputError(f"annotator {annotator_id!r} does not exist (or is not an annotator)")
    why = f"waived: {reason.strip()}"
    attempt = len(store.qual_attempts(annotator_id)) + 1
    store.finish_qualification(
        annotator_id,
        attempt,
        {
            "axes": {
                a: {"kappa": None, "n": 0, "passed": True, "undefined_reason": why} for a in AXES
            },
            "overall": None,
            "passed": True,
            "threshold": None,
            "reason": why,
            "waived": True,
        },
    )
    click.echo(f"annotate waive-qualification: {annotator_id} may rate items (attempt {attempt})")


@main.command()
@click.argument("annotator_id")
@db_option
@overlap_option
@params_option
@fail_cleanly
def release(annotator_id: str, db_path: str, overlap: int | None, params_path: str) -> None:
    """Give a dropout's unrated items to the rest of the team (their ratings stay). Safe while
    the server runs; they get items again if they sign in and ask for work."""
    store = _open_store(db_path, must_exist=True)
    cfg = _annotation_params(params_path)
    released, added = store.release(
        annotator_id,
        overlap=_overlap(overlap, cfg),
        seed=cfg["seed"],
    )
    click.echo(
        f"annotate release: {released} unrated items taken from {annotator_id}, "
        f"{added} new assignments for the others"
    )


@main.command()
@db_option
@fail_cleanly
def users(db_path: str) -> None:
    """List accounts with their progress, hours since their last activity, and who is released."""
    store = _open_store(db_path, must_exist=True)
    rows = store.annotators()
    idle = store.idle_seconds()
    released = store.released()
    click.echo(
        f"{'annotator':<20} {'role':<9} {'done':>5} {'assigned':>8} {'skipped':>7} "
        f"{'active min':>10} {'idle h':>7}"
    )
    for r in rows:
        state = " released" if r["id"] in released else ""
        click.echo(
            f"{r['id']:<20} {r['role']:<9} {r['rated']:>5} "
            f"{r['assigned']:>8} {r['skipped']:>7} {r['active_ms'] / 60000:>10.1f} "
            f"{idle.get(r['id'], 0.0) / 3600:>7.1f}{state}"
        )


@main.command()
@db_option
@out_dir_option("Where raw batches live.")
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Exact output file (default: this database's batch_NNN.jsonl in --out-dir).",
)
@click.option(
    "--timings",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write time per item (active seconds) and edit counts as CSV.",
)
@click.option(
    "--notes",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write adjudication notes and annotators' comments and flags as CSV.",
)
@fail_cleanly
def export(
    db_path: str, out_dir: str, output: str | None, timings: str | None, notes: str | None
) -> None:
    """Write every rating as raw annotation JSONL (sorted by id, annotator), and the final
    ratings of adjudicated items beside it (``batch_NNN.adjudicated.jsonl``,
    ``annotator_id: adjudicated:<name>``).

    The first export takes the next free batch_NNN.jsonl; later exports of the same database
    rewrite that file, so an edited rating never appears in two batches.
    """
    from evalpipe.annotation.web import export as ex

    store = _open_store(db_path, must_exist=True)
    salt = rater_salt(PATHS.root)
    records = ex.export_records(store, salt=salt)
    if not records:
        raise InputError(f"{db_path}: no ratings to export yet")
    target = Path(output) if output else ex.batch_path(store, out_dir)
    adjudicated = ex.adjudication_records(store, salt=salt)
    adj_target = ex.adjudication_path(target)
    _refuse_duplicates(records, target.parent, exclude=target)
    _refuse_duplicates(adjudicated, adj_target.parent, exclude=adj_target)
    atomic.write_text(target, ex.to_jsonl(records))
    if adjudicated:
        atomic.write_text(adj_target, ex.to_jsonl(adjudicated))
    if not output:
        ex.remember_batch(store, target)
    if notes:
        atomic.write_text(
            notes,
            ex.csv_text(
                ex.notes_rows(store, salt=salt), ["id", "annotator_id", "kind", "flag", "text"]
            ),
        )
    if timings:
        atomic.write_text(
            timings,
            ex.csv_text(
                ex.timing_rows(store, salt=salt),
                ["id", "annotator_id", "active_seconds", "revisions"],
            ),
        )
    n_people = len({r["annotator_id"] for r in records})
    extra = f"; {len(adjudicated)} adjudicated -> {adj_target}" if adjudicated else ""
    click.echo(
        f"annotate export: {len(records)} ratings by {n_people} annotators -> {target}{extra}"
    )


@main.command("export-qualification")
@db_option
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    default=str(PATHS.raw / "qualification" / "results.jsonl"),
    show_default=True,
    help="Where to write the results (one JSON object per attempt).",
)
@fail_cleanly
def export_qualification(db_path: str, output: str) -> None:
    """Write every scored qualification attempt: annotator, attempt, passed, kappa per axis.

    Not an annotation batch (the items are the qualification set, not the tasks), so it goes
    outside data/raw/annotations/.
    """
    from evalpipe.annotation.web import export as ex

    store = _open_store(db_path, must_exist=True)
    rows = ex.qualification_records(store, salt=rater_salt(PATHS.root))
    atomic.write_text(output, ex.to_jsonl(rows))
    passed = sorted({r["annotator_id"] for r in rows if r["passed"]})
    click.echo(
        f"annotate export-qualification: {len(rows)} attempts, {len(passed)} annotators "
        f"passed -> {output}"
    )


@main.command()
@db_option
@click.argument("dest", required=False, type=click.Path(dir_okay=False))
@fail_cleanly
def backup(db_path: str, dest: str | None) -> None:
    """Copy the live database with SQLite's backup API (safe while the server runs)."""
    store = _open_store(db_path, must_exist=True)
    if dest is None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        dest = str(Path(db_path).parent / "backups" / f"annotations-{stamp}.sqlite")
    path = store.backup(dest)
    click.echo(f"annotate backup: {store.count_ratings()} ratings -> {path}")


@main.command()
@tasks_option()
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    default="annotation_template.xlsx",
    show_default=True,
)
@params_option
@fail_cleanly
def template(tasks_path: str, output: str, params_path: str) -> None:
    """Write an .xlsx for offline annotators (dropdowns, guidelines sheet, text-safe cells)."""
    from evalpipe.annotation.schema import read_tasks
    from evalpipe.annotation.spreadsheet import write_template

    cfg = _annotation_params(params_path)
    tasks = read_tasks(tasks_path)
    write_template(tasks, output, context_window=int(cfg["context_window"]))
    click.echo(f"annotate template: {len(tasks)} items -> {output}")


@main.command("import")
@click.argument("xlsx", type=click.Path(dir_okay=False))
@click.option("--annotator", "annotator_id", required=True, help="Who filled in the sheet.")
@tasks_option("Check ids against this task set (skipped if the file does not exist).")
@out_dir_option()
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Exact output file (default: the next free batch_NNN.jsonl in --out-dir).",
)
@click.option(
    "--timestamp",
    default=None,
    help="ISO 8601 UTC for the records (default: when the sheet was last saved).",
)
@fail_cleanly
def import_(
    xlsx: str,
    annotator_id: str,
    tasks_path: str,
    out_dir: str,
    output: str | None,
    timestamp: str | None,
) -> None:
    """Validate every cell of a filled-in template and write a raw batch; nothing on any error."""
    from evalpipe.annotation.schema import read_tasks
    from evalpipe.annotation.spreadsheet import read_filled
    from evalpipe.annotation.web.export import next_batch_path, to_jsonl
    from evalpipe.annotation.web.store import check_annotator_id

    check_annotator_id(annotator_id)
    task_ids = [t.id for t in read_tasks(tasks_path)] if Path(tasks_path).exists() else None
    result = read_filled(
        xlsx,
        annotator_id=pseudonymise_id(annotator_id, rater_salt(PATHS.root)),
        task_ids=task_ids,
        timestamp=timestamp,
    )
    target = Path(output) if output else next_batch_path(out_dir)
    _refuse_duplicates(result.records, target.parent, exclude=target)
    atomic.write_text(target, to_jsonl(result.records))
    click.echo(
        f"annotate import: {len(result.records)} ratings by {annotator_id} "
        f"({len(result.skipped_rows)} rows left empty) -> {target}"
    )


@main.command()
@click.argument("annotator_id")
@db_option
@click.option(
    "--raw-dir",
    default=str(PATHS.raw_annotations),
    show_default=True,
    help="Folder of exported batches to remove the person's records from.",
)
@click.option(
    "--qualification",
    default=str(PATHS.raw / "qualification" / "results.jsonl"),
    show_default=True,
    help="Exported qualification results to remove the person's attempts from.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@fail_cleanly
def forget(annotator_id: str, db_path: str, raw_dir: str, qualification: str, yes: bool) -> None:
    """Delete one person's data: their account and everything they entered in the database,
    and their records (by pseudonym) in the exported batches and qualification results.

    ANNOTATOR_ID is the login id or its pseudonym. Run ``dvc repro agreement`` afterwards so
    the reports follow.
    """
    store = _open_store(db_path, must_exist=True)
    salt = rater_salt(PATHS.root)
    login = store.login_for(annotator_id, salt=salt)
    if login is None:
        raise InputError(f"{db_path}: no annotator {annotator_id!r} (login id or pseudonym)")
    if not yes:
        click.confirm(f"Delete every record of {login}?", abort=True)
    alias = pseudonymise_id(login, salt)
    names = {login, alias, f"adjudicated:{login}", f"adjudicated:{alias}"}
    deleted = store.forget_annotator(login)
    files = 0
    removed = 0
    paths = sorted(Path(raw_dir).glob("*.jsonl")) if Path(raw_dir).exists() else []
    if Path(qualification).exists():
        paths.append(Path(qualification))
    for path in paths:
        lines = path.read_text(encoding="utf-8").splitlines()
        keep = []
        for line in lines:
            try:
                who = json.loads(line).get("annotator_id") if line.strip() else None
            except (json.JSONDecodeError, AttributeError):
                who = None
            if who in names:
                removed += 1
            else:
                keep.append(line)
        if len(keep) != len(lines):
            files += 1
            atomic.write_text(path, "".join(line + "\n" for line in keep))
    click.echo(
        f"annotate forget: {login} ({alias[:12]}...): {deleted} database rows, {removed} "
        f"exported records in {files} file(s) deleted"
    )


@main.command()
@click.argument("plan_path", default=str(PATHS.for_reannotation), type=click.Path(dir_okay=False))
@db_option
@click.option(
    "--add-raters",
    default=1,
    show_default=True,
    help="Annotators added to each item whose strategy is add_raters.",
)
@params_option
@fail_cleanly
def reannotate(plan_path: str, db_path: str, add_raters: int, params_path: str) -> None:
    """Feed the re-annotation list (``dvc repro agreement`` writes it) into the queues: items
    open again for the same raters (high priority), go to added raters (medium), or are listed
    for revision (low). Safe while the server runs."""
    path = Path(plan_path)
    if not path.exists():
        raise InputError(f"{path}: no re-annotation list (run `dvc repro agreement` first)")
    plan = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{lineno}: not valid JSON ({exc.msg})") from exc
        if not isinstance(row, dict) or not {"id", "strategy", "priority"} <= set(row):
            raise InputError(f"{path}:{lineno}: expected an object with id, priority, strategy")
        plan.append(row)
    store = _open_store(db_path, must_exist=True)
    seed = int(load_params(params_path)["seed"])
    counts = store.reannotate(plan, salt=rater_salt(PATHS.root), add_raters=add_raters, seed=seed)
    click.echo(
        f"annotate reannotate: {len(plan)} items: {counts['reopened']} ratings reopened for the "
        f"same raters, {counts['added']} assignments to added raters, {counts['revise']} items "
        f"listed for revision"
    )


@main.command("export-gold")
@db_option
@click.option(
    "--output",
    default=str(PATHS.raw / "gold" / "results.jsonl"),
    show_default=True,
    type=click.Path(dir_okay=False),
    help="Where to write the per-annotator gold scores.",
)
@fail_cleanly
def export_gold(db_path: str, output: str) -> None:
    """Score every annotator on the gold items hidden in their queue: accuracy, mean absolute
    error, and drift (later half minus earlier half). Annotators by pseudonym."""

    store = _open_store(db_path, must_exist=True)
    salt = rater_salt(PATHS.root)
    rows = score_gold(store.gold_ratings(), store.gold_reference())
    for row in rows:
        row["annotator_id"] = pseudonymise_id(row["annotator_id"], salt)
    rows.sort(key=lambda r: r["annotator_id"])
    atomic.write_text(output, "".join(json.dumps(r) + "\n" for r in rows))
    click.echo(f"annotate export-gold: {len(rows)} annotators scored on gold items -> {output}")


@main.command("import-csv")
@click.argument("csv_path", type=click.Path(dir_okay=False))
@tasks_option("Check ids against this task set (skipped if the file does not exist).")
@out_dir_option()
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Exact output file (default: the next free batch_NNN.jsonl in --out-dir).",
)
@fail_cleanly
def import_csv(csv_path: str, tasks_path: str, out_dir: str, output: str | None) -> None:
    """Turn a raw CSV (``dialogue_id, annotator_id, social, avoidant, mechanical, self,
    timestamp``) into a batch, annotators by pseudonym; nothing is written on any error."""
    from evalpipe.annotation.schema import annotation_to_dict, read_annotations, read_tasks
    from evalpipe.annotation.web.export import next_batch_path, to_jsonl

    task_ids = [t.id for t in read_tasks(tasks_path)] if Path(tasks_path).exists() else None
    rows = read_annotations(csv_path, task_ids=task_ids)
    salt = rater_salt(PATHS.root)
    records = sorted(
        (
            annotation_to_dict(a) | {"annotator_id": pseudonymise_id(a.annotator_id, salt)}
            for a in rows
        ),
        key=lambda r: (r["id"], r["annotator_id"]),
    )
    target = Path(output) if output else next_batch_path(out_dir)
    _refuse_duplicates(records, target.parent, exclude=target)
    atomic.write_text(target, to_jsonl(records))
    people = len({r["annotator_id"] for r in records})
    click.echo(f"annotate import-csv: {len(records)} ratings by {people} annotators -> {target}")
