"""Models: pure torch ``nn.Module``s and boosting adapters, found through :mod:`.registry`.

Every torch model maps numeric features ``x_num`` (B × n_num, float) and categorical codes
``x_cat`` (B × n_cat, long; code 0 = missing or unseen) to ``d_out`` outputs (logits, or one value
for regression). Constructors are keyword-only: ``Model(n_num=..., cat_cardinalities=[...],
d_out=..., **hyperparameters)``.
"""
