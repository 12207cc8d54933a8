"""agentsum: multi-agent and pointer-generator abstractive summarization."""

__version__ = "0.1.0"
