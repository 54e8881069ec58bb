"""The product: `karpy`'s command line (`cli.py`), the top layer that may import every package.

Nothing imports `karpy`; `controller`, `webapp`, `certs` and `localcluster` stay unaware of each
other's processes, and this package starts them (`karpy dev`, `karpy controller`, `karpy webapp`).
"""
