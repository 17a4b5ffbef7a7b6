"""Training and qualification in the web app.

Order for each annotator: rate the worked examples (``guidelines/examples.json``), each followed
by its reference rating and explanation; then the 30-item qualification test, scored per axis by
quadratic kappa against the reference (``qualification.score_qualification``). A pass opens the
real queue. After a failed attempt the annotator trains again, on the worked examples of the axes
that failed (all 20 if none can be singled out), and may then retry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from flask import Flask, abort, g, redirect, render_template, request, url_for

from evalpipe.annotation import guidelines as gl
from evalpipe.annotation import qualification as qual
from evalpipe.annotation.schema import AXES
from evalpipe.annotation.web.assignment import presentation_order
from evalpipe.annotation.web.forms import form_values, parse_rating_form
from evalpipe.annotation.web.store import Store
from evalpipe.errors import InputError


@dataclass
class Progress:
    """Where an annotator stands in training and qualification."""

    passed: bool
    attempts: list[dict[str, Any]]
    round: int
    examples: list[dict[str, Any]]
    trained: dict[str, dict[str, int]]
    attempt: int
    answered: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def training_todo(self) -> list[dict[str, Any]]:
        return [e for e in self.examples if e["id"] not in self.trained]

    @property
    def step(self) -> str:
        """``queue``, ``training`` or ``qualify``."""
        if self.passed:
            return "queue"
        return "training" if self.training_todo else "qualify"


def round_examples(attempts: list[dict[str, Any]], examples: list[dict[str, Any]]) -> list[dict]:
    """The worked examples of the next training round: all before the first attempt, then those
    of the axes the last attempt failed (all of them if no axis can be singled out)."""
    if not attempts:
        return list(examples)
    axes = attempts[-1]["result"].get("axes", {})
    failed = {a for a in AXES if not axes.get(a, {}).get("passed", False)}
    chosen = [e for e in examples if e.get("focus_axis") in failed]
    return chosen or list(examples)


def progress(store: Store, annotator_id: str) -> Progress:
    """The annotator's training / qualification state from the database."""
    attempts = store.qual_attempts(annotator_id)
    passed = any(a["passed"] for a in attempts)
    rnd = len(attempts) + 1
    examples = round_examples(attempts, gl.examples())
    attempt = len(attempts) + 1
    return Progress(
        passed=passed,
        attempts=attempts,
        round=rnd,
        examples=examples,
        trained=store.training(annotator_id, rnd),
        attempt=attempt,
        answered={} if passed else store.qual_answers(annotator_id, attempt),
    )


def gate(store: Store, annotator_id: str, config: Any) -> str | None:
    """Where an annotator must go before the real queue, or None when they may rate items."""
    if not config.require_qualification:
        return None
    step = progress(store, annotator_id).step
    if step == "queue":
        return None
    return url_for("training") if step == "training" else url_for("qualify")


def register(app: Flask, store: Store, config: Any, require_login: Callable[[], Any]) -> None:
    """Add the training and qualification routes to ``app``."""

    def annotator_only() -> Any:
        if (resp := require_login()) is not None:
            return resp
        if not g.user.rates_items:
            abort(403)
        return None

    examples_by_id = {e["id"]: e for e in gl.examples()}
    items = qual.qualification_items()
    items_by_id = {i["id"]: i for i in items}
    reference = qual.qualification_reference()

    @app.route("/training", methods=["GET", "POST"])
    def training() -> Any:
        if (resp := annotator_only()) is not None:
            return resp
        prog = progress(store, g.user.id)
        errors: list[str] = []
        values: dict[str, str] = {}
        if request.method == "POST":
            example_id = request.form.get("example_id", "")
            if example_id not in {e["id"] for e in prog.examples}:
                abort(400)
            scores, _conf, errors = parse_rating_form(request.form, with_confidence=False)
            if not errors:
                try:
                    store.save_training(g.user.id, prog.round, example_id, scores)
                except InputError as exc:
                    errors = [str(exc)]
                else:
                    return redirect(url_for("training_feedback", example_id=example_id), 303)
            values = form_values(request.form)
        todo = prog.training_todo
        if not todo:
            return render_template("training_done.html", prog=prog)
        example = todo[0]
        html = render_template(
            "training.html",
            prog=prog,
            example=example,
            number=len(prog.examples) - len(todo) + 1,
            values=values,
            errors=errors,
        )
        return html, (400 if errors else 200)

    @app.get("/training/<example_id>")
    def training_feedback(example_id: str) -> Any:
        if (resp := annotator_only()) is not None:
            return resp
        prog = progress(store, g.user.id)
        example = examples_by_id.get(example_id)
        mine = prog.trained.get(example_id)
        if example is None or mine is None:
            abort(404)
        return render_template(
            "training_feedback.html",
            prog=prog,
            example=example,
            mine=mine,
            gold=example.get("gold", {}),
            remaining=len(prog.training_todo),
        )

    @app.route("/qualify", methods=["GET", "POST"])
    def qualify() -> Any:
        if (resp := annotator_only()) is not None:
            return resp
        prog = progress(store, g.user.id)
        if prog.passed:
            return redirect(url_for("qualify_result"))
        if prog.training_todo:
            return redirect(url_for("training"))
        order = presentation_order(
            [i["id"] for i in items], f"{g.user.id}#qual{prog.attempt}", seed=0
        )
        errors: list[str] = []
        values: dict[str, str] = {}
        if request.method == "POST":
            item_id = request.form.get("item_id", "")
            if item_id not in items_by_id:
                abort(400)
            scores, confidence, errors = parse_rating_form(request.form)
            if not errors:
                store.save_qual_answer(g.user.id, prog.attempt, item_id, scores, confidence)
                answered = store.qual_answers(g.user.id, prog.attempt)
                if len(set(answered) & set(reference)) == len(reference):
                    result = qual.score_qualification(answered, reference)
                    store.finish_qualification(g.user.id, prog.attempt, result)
                    return redirect(url_for("qualify_result"), 303)
                return redirect(url_for("qualify"), 303)
            values = form_values(request.form)
            current = item_id
        else:
            current = next(i for i in order if i not in prog.answered)
        html = render_template(
            "qualify.html",
            prog=prog,
            item=items_by_id[current],
            number=len(prog.answered) + 1,
            total=len(order),
            values=values,
            errors=errors,
        )
        return html, (400 if errors else 200)

    @app.get("/qualify/result")
    def qualify_result() -> Any:
        if (resp := annotator_only()) is not None:
            return resp
        prog = progress(store, g.user.id)
        if not prog.attempts:
            return redirect(url_for("qualify"))
        return render_template("qualify_result.html", prog=prog, last=prog.attempts[-1])
