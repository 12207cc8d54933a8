"""agentsum: multi-agent and pointer-generator abstractive summarization.

``from agentsum import Summarizer`` is the Python API (:mod:`agentsum.summarizer`); it is imported
on first use, so ``import agentsum`` stays light.
"""

__version__ = "0.1.0"
__all__ = ["Summarizer"]


def __getattr__(name: str):
    if name == "Summarizer":
        from agentsum.summarizer import Summarizer

        return Summarizer
    raise AttributeError(f"module 'agentsum' has no attribute {name!r}")
