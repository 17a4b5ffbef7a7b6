"""What a benchmark's answer is and how to read it: answer types (:mod:`.types`), the parsers that
turn a model's output into a prediction (:mod:`.parsers`) and the text normalisation both the
parsers and the gold answers go through (:mod:`.normalise`).

A leaf of the package: it imports nothing above :mod:`evalpipe.errors`, and neither pandas nor
numpy, so the benchmark specs (and every stage that reads one) load it for free.
"""
