"""The counts of one benchmark's perturbation: ``data/perturbed/{name}.summary.json``
(docs/perturbation.md, "Output")."""

from __future__ import annotations

import operator
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evalpipe.perturb.ops import OPS, Operation, Probabilities, Skipped
from evalpipe.perturb.scripts import char_class
from evalpipe.perturb.targets import Target

_KIND_RULE_DRAWN = operator.attrgetter("op", "rule", "drawn")  # what the counts group by
NOT_FOUND_SHOWN = 20  # target words named in targets_not_found_top


@dataclass
class SummaryCounter:
    """Running counts while a benchmark is perturbed; :meth:`summary` states them.

    ``keyboard``: the typo model is ``keyboard`` or ``natural`` (its replacements and insertions made by the
    uniform rule are counted per script class in ``keyboard_fallback``).
    """

    keyboard: bool
    found_targets: set[int] = field(default_factory=set)
    occurrences: int = 0
    perturbed_occurrences: int = 0
    protected_occurrences: int = 0
    # the kind each typo draw picked, before a replacement / insertion with no eligible place
    # became a deletion and before skipped transpositions / conversions
    drawn: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPS, 0))
    operations: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPS, 0))
    rules: dict[str, dict[str, int]] = field(default_factory=lambda: {op: {} for op in OPS})
    fallback: dict[str, int] = field(default_factory=dict)
    skipped: dict[str, dict[str, int]] = field(
        default_factory=lambda: {"transpose": {}, "conversion": {}}
    )
    # "drawn->made": a drawn kind that could not apply, replaced by one that could
    redrawn: Counter[str] = field(default_factory=Counter)
    # Japanese with conversion_prob > 0 (``counts_conversions``): the occurrence draws on which
    # a conversion could be made; otherwise the summary has no conversion keys
    counts_conversions: bool = False
    conversion_eligible: int = 0

    def merge(self, other: SummaryCounter) -> None:
        """Add the counts of ``other``, made on the examples after this one's (keys first seen
        there come after this one's, as in a single pass)."""
        self.found_targets |= other.found_targets
        self.occurrences += other.occurrences
        self.perturbed_occurrences += other.perturbed_occurrences
        self.protected_occurrences += other.protected_occurrences
        self.conversion_eligible += other.conversion_eligible
        for mine, theirs in ((self.drawn, other.drawn), (self.operations, other.operations)):
            for key, n in theirs.items():
                mine[key] = mine.get(key, 0) + n
        for key, n in other.fallback.items():
            self.fallback[key] = self.fallback.get(key, 0) + n
        for mine_nested, theirs_nested in (
            (self.rules, other.rules),
            (self.skipped, other.skipped),
        ):
            for op, counts in theirs_nested.items():
                mine = mine_nested.setdefault(op, {})
                for key, n in counts.items():
                    mine[key] = mine.get(key, 0) + n
        self.redrawn.update(other.redrawn)

    def count_skipped(self, skipped: Skipped) -> None:
        """A drawn transposition or conversion that had nothing to make."""
        reasons = self.skipped.setdefault(skipped.op, {})
        reasons[skipped.reason] = reasons.get(skipped.reason, 0) + 1

    def count_operations(self, operations: Sequence[Operation]) -> None:
        """The operations of written rows (one row's, or several rows' one after another)."""
        self.perturbed_occurrences += len(operations)
        # Counted by (kind, rule, drawn) first: a benchmark makes hundreds of thousands of
        # operations of a few dozen such triples. The counts, and the order in which each
        # dict first sees its keys, are those of counting the operations one by one.
        tally = Counter(map(_KIND_RULE_DRAWN, operations))  # in C, keys in first-seen order
        if self.keyboard:
            fallback = self.fallback
            for op in operations:
                if op.rule == "uniform":
                    char = op.new_char if op.op == "insert" else op.original_char
                    cls = char_class(char[0]) if char else None
                    if cls is not None:  # a uniform draw is always of a script class
                        fallback[cls] = fallback.get(cls, 0) + 1
        for (kind, rule, drawn), n in tally.items():
            self.operations[kind] += n
            rules = self.rules[kind]
            rules[rule] = rules.get(rule, 0) + n
            if drawn:  # the kind drawn could not apply: this one was drawn instead
                self.redrawn[f"{drawn}->{kind}"] += n

    def summary(
        self,
        *,
        benchmark: str,
        language: str,
        examples: int,
        targets: Sequence[Target],
        draws: int,
        rows: int,
        probabilities: Probabilities,
        seed: int,
    ) -> dict[str, Any]:
        """The summary dict (key order as written to the JSON file, which sorts them anyway)."""
        found = self.found_targets
        conversions = {}
        if self.counts_conversions:
            eligible = self.conversion_eligible
            conversions = {
                # a conversion fires only where the IME would convert (a free-standing word with
                # a homophone): its configured rate is delivered among these draws, not all
                "conversion_eligible": eligible,
                "conversion_rate_eligible": (
                    round(self.operations["conversion"] / eligible, 6) if eligible else 0.0
                ),
            }
        return {
            "benchmark": benchmark,
            "language": language,
            "examples": examples,
            "target_words": len(targets),
            "target_words_found": len(found),
            # target words with no (unprotected) occurrence here: the count, and the
            # best-ranked few by name (the full list would repeat most of the word list on a
            # small benchmark)
            "targets_not_found": len(targets) - len(found),
            "targets_not_found_top": [
                t.variant
                for t in sorted(
                    (t for i, t in enumerate(targets) if i not in found),
                    key=lambda t: (t.rank, t.variant),
                )[:NOT_FOUND_SHOWN]
            ],
            "occurrences": self.occurrences,
            "perturbed_occurrences": self.perturbed_occurrences,
            # over every draw: each occurrence is drawn `draws` times
            "perturbed_fraction": (
                round(self.perturbed_occurrences / (self.occurrences * draws), 6)
                if self.occurrences
                else 0.0
            ),
            "draws": draws,
            "rows": rows,
            "perturbed_rows": rows - examples,
            "protected_occurrences": self.protected_occurrences,
            "operations": self.operations,
            "drawn": self.drawn,
            # how each kind's new text was chosen (ops.RULES): uniform, qwerty, romaji, ...
            "operations_by_rule": {op: dict(sorted(r.items())) for op, r in self.rules.items()},
            # model keyboard: replacements / insertions made by the uniform rule, by script class
            "keyboard_fallback": dict(sorted(self.fallback.items())),
            # drawn transpositions / conversions with nothing to make (left unchanged), by reason
            "skipped": {op: dict(sorted(r.items())) for op, r in self.skipped.items()},
            **conversions,
            **probabilities.as_dict(),
            "seed": seed,
        }
