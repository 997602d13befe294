"""The planner's knobs a face checks (open epochs, flush policy, an LFTA
table's ways): their values and bounds, apart from the plan's classes so
that a face can check its options without loading the planner.
"""
from __future__ import annotations

# Epochs of the temporal group-by an aggregation keeps open at once (Li et al. 2008,
# Tigon's max_lfta_disorder / max_hfta_disorder and their defaults): 1 is
# in-order processing, more lets tuples that arrive up to that many epochs
# behind the newest still count.
DEFAULT_LFTA_DISORDER = 2
DEFAULT_HFTA_DISORDER = 3
MAX_DISORDER = 32   # open epochs an aggregation may keep (the LFTA table's GSQ_AGG_MAX_EPOCHS)
# How an aggregation hands on the groups of a closed epoch: 'slow' spreads
# them over the following input (one per tuple), 'lazy' (LFTA) leaves them
# until their slot is needed or the next epoch closes, 'immediate' all at once.
FLUSH_POLICIES = ("slow", "lazy", "immediate")
DEFAULT_FLUSH = "slow"

TABLE_WAYS = (1, 2, 4, 8, 16)   # the associativities an LFTA table may have
