"""Repeats and few-shot draws: the run-to-run spread the typo effect is read against.

``sampling.repeats: n`` answers every prompt n times at temperature > 0, repeat r at its own
hashed seed (part of each request's cache key, so repeats differ, are cached and come back the
same); ``prompt.fewshot_draws: n`` renders every few-shot prompt with n hashed selections of
demonstrations. Every replicate of a perturbed row is one more pair of its example (its ``draw``
offset past the typo draws), so the headline, word and impact intervals, clustered on the
example, take them in as they take typo draws. The clean prompt answered again at another seed
(arm ``repeat``) or with other demonstrations (arm ``fewshot_draw``), paired with its first
answer, measures the spread a rerun alone causes. ``prompt.templates`` adds one arm per named
instruction template of the specs (``template:<name>``): the clean prompt with the spec's
instruction against the same example reworded, what rewording alone does.
``metrics/<model>/repeats.json`` sets these beside the typo effect, with intervals for all.
"""
