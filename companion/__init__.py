"""companion: executable walk-throughs of 56 ICML/ICLR 2023 papers, backed by one library.

Every paper lives in ``companion.papers.<slug>`` and follows one contract::

    from companion.papers import sigma_reparam as paper
    cfg = paper.PRESETS["notebook"].replace(seed=1)
    result = paper.run(cfg)
    report = paper.check_claims(result)
"""

__version__ = "0.1.0"
