"""Studies: the optional analyses beside the headline typo effect, each one package.

A study declares, module by module, what it adds to each stage, and the stage iterates over the
enabled studies instead of branching on them:

- ``generate.py``: its arms and requests (a ``GenerationPart`` of
  :mod:`evalpipe.inference.plan`), listed in :mod:`evalpipe.studies.generate`;
- ``score.py``: its figures from the pairs table and the metrics files it writes (a
  ``ScorePart`` of :mod:`evalpipe.scoring.study`), listed in :mod:`evalpipe.studies.score`;
- ``impact.py``: its groupings of every model's pairs into tables and plots (an
  ``ImpactPart``), listed in :mod:`evalpipe.studies.impact`;
- ``report.py``: its section of the HTML report, listed in :mod:`evalpipe.studies.report`.

Each module sits in the layer of its stage (``scripts/layer_check.py``: ``STUDY_PARTS``), so a
stage depends only on the parts it runs. Adding a study is its package and one line in each list
it joins (docs/extending.md).
"""
