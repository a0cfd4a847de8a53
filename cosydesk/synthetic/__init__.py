"""Synthetic models, part of the product: tiny official-format models with random weights (``cosydesk doctor
--self-test``, trying the app without a download: ``python -m cosydesk.synthetic.tiny_model DIR``) and random
full-size ones for ``cosydesk bench --random``. Test and measurement plumbing lives in tests/support and tools/.
"""
