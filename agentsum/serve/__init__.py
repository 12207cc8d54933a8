"""The HTTP service (``agentsum serve``): request and response schemas, the served model, the
request batcher, the FastAPI app and the web page.

This package's ``__init__`` imports nothing, so ``agentsum.serve.options`` (the command's options)
loads without FastAPI, pydantic and uvicorn; the app is in ``agentsum.serve.app``.
"""
