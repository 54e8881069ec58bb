"""Answers to "why", "what if" and "how much" (issue 22): explain a node or a pod, what-if a
manifest, simulate a whole cluster — each computed with the code that decides, changing nothing.
"""
