"""Importers: public legal benchmarks, in their upstream layouts, as ``legal_eval_v1``."""
