"""Models: pure torch ``nn.Module``s, their attention primitives and the registry.

Every torch model maps numeric features ``x_num`` (B × n_num, float) and categorical codes
``x_cat`` (B × n_cat, long; code 0 = missing or unseen) to ``d_out`` outputs (logits, or one value
for regression). Constructors are keyword-only: ``Model(n_num=..., cat_cardinalities=[...],
d_out=..., **hyperparameters)``. Nothing here trains, reads data or knows the harness: training is
the learners package, with the shared training loop.
"""
