"""The names of the packed inputs every preprocessor writes and every backbone takes."""

# int32 [batch, seq] each: word-piece ids, segment (token type) ids, 1 on real tokens.
MODEL_INPUTS = ("token_ids", "segment_ids", "padding_mask")
# The masked-LM head's extra input: int32 [batch, max_predictions_per_seq].
MASK_POSITIONS = "mask_positions"
