"""The copy mechanism: the one place where vocabulary and copy probabilities are mixed.

Every pointer-generator in the package (DCA's single and multi-agent pointers, eq 14-16, and the
Transformer pointer-generator) reduces to the same mixture over the extended vocabulary:

    P(w) = gen_weight * P_voc(w) + sum_{j : src_ext[j] = w} copy_weight[j]

with ``gen_weight + sum_j copy_weight[j] = 1``. For DCA's multi-agent pointer (eq 15-16),
``gen_weight = sum_a g_a p_a`` and ``copy_weight[a, i] = g_a (1 - p_a) l_{a,i}``; for a single
pointer (See et al., 2017) ``gen_weight = p`` and ``copy_weight[a, i] = (1 - p) g_a l_{a,i}``.

Models return a :class:`CopyDistribution`; search asks it for the full extended distribution and
training asks only for the probability of the target, which avoids building a (B, T, V_ext) tensor.

**Copy-only words.** Search may forbid the generator some vocabulary words (``log_probs(no_generation=
mask)``; ``search.numbers_from_source`` forbids the numerals) while copying them stays allowed: their
``P_voc`` is set to 0 and nothing else changes,

    P(w) = sum_{j : src_ext[j] = w} copy_weight[j]                     for a forbidden w
    P(w) = gen_weight * P_voc(w) + sum_{j : src_ext[j] = w} copy_weight[j]   otherwise

so a forbidden word that the source holds keeps exactly its copy mass, one the source lacks gets
none, and every other word keeps exactly its probability. The generator is not renormalised over
the allowed words: where the model meant to generate a number the source lacks, that mass is
dropped rather than moved onto the generator's next guesses (which would put a confident
"the" where a figure was meant); the step's copy part, which at such a step usually attends to the
source's figures, then leads, and beam search sees the hypothesis lose the mass and can prefer
another continuation (the way Hugging Face's bad-word filter acts on beam scores). The result is a
sub-distribution (it sums to 1 minus the dropped mass); search only ranks and normalises scores,
and ``torch.multinomial`` normalises its weights. A model without a copy mechanism cannot produce
a forbidden word at all.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

# Probabilities are clamped here before the log so an impossible word gets a large finite
# negative log-probability (about -87) instead of -inf, and no NaN reaches the gradient.
_TINY = 1e-38


class _TargetLogSoftmax(torch.autograd.Function):
    """log_softmax(logits)[index] without the (..., V) log_softmax output or a dense one-hot.

    Training needs the log-probability of one word per position; ``log_softmax(...).gather(...)``
    writes a (..., V) tensor forward and, backward, scatters the gradient into a zero (..., V)
    tensor before the softmax backward reads both. Here the forward keeps only the log-sum-exp and
    the backward forms ``grad * (one_hot - softmax)`` in one tensor.
    """

    # bf16 logits (autocast) are normalised in float32; the gradient returns in the logits' dtype.

    @staticmethod
    def forward(ctx, logits: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        x = logits.to(torch.promote_types(logits.dtype, torch.float32))
        lse = torch.logsumexp(x, dim=-1)
        ctx.save_for_backward(logits, index, lse)
        return x.gather(-1, index.unsqueeze(-1)).squeeze(-1) - lse

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        logits, index, lse = ctx.saved_tensors
        grad = grad.to(lse.dtype).unsqueeze(-1)
        g = torch.sub(logits.to(lse.dtype), lse.unsqueeze(-1)).exp_().mul_(-grad)  # -grad * softmax
        g.scatter_add_(-1, index.unsqueeze(-1), grad)  # + grad at the target
        return g.to(logits.dtype), None


def target_log_softmax(logits: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``log_softmax(logits, -1).gather(-1, index[..., None])[..., 0]``; logits (..., V), index (...)."""
    return _TargetLogSoftmax.apply(logits, index)


class CopyDistribution:
    """A distribution over the extended vocabulary for every decoding position.

    Attributes:
        vocab_logits: (..., V) unnormalised scores of the generator. A model may pass ``None`` with
                      ``features`` (..., F) and ``output_layer`` (F -> V) instead: the logits are
                      then computed when first needed, and :meth:`at` computes them only at the
                      positions it keeps (training skips the output layer on padded targets).
        gen_weight:   (...,) probability of generating from the vocabulary, or None (no copying).
        copy_weight:  (..., L) probability of copying each source position, or None.
        src_ext_ids:  (B, L) extended ids of the source positions; the leading dim of the other
                      fields is B, and any dims between B and L broadcast.
        n_ext:        V_ext, the size of the extended vocabulary.
    """

    def __init__(self, vocab_logits: torch.Tensor | None, gen_weight: torch.Tensor | None,
                 copy_weight: torch.Tensor | None, src_ext_ids: torch.Tensor, n_ext: int, *,
                 features: torch.Tensor | None = None, output_layer: torch.nn.Linear | None = None):
        if vocab_logits is None and (features is None or output_layer is None):
            raise ValueError("CopyDistribution needs vocab_logits, or features and an output_layer")
        self._logits = vocab_logits
        self.features, self.output_layer = features, output_layer
        self.gen_weight, self.copy_weight = gen_weight, copy_weight
        self.src_ext_ids, self.n_ext = src_ext_ids, n_ext

    @property
    def vocab_logits(self) -> torch.Tensor:
        if self._logits is None:
            features = self.features
            weight = self.output_layer.weight
            # a dynamically quantized layer (int8: agentsum.models.quantize) takes float32 input and
            # keeps its weight behind a method
            dtype = weight.dtype if isinstance(weight, torch.Tensor) else torch.float32
            if features.dtype != dtype and not torch.is_autocast_enabled(features.device.type):
                features = features.to(dtype)  # bf16 features (autocast) read after the region
            self._logits = self.output_layer(features)
        return self._logits

    @property
    def vocab_size(self) -> int:
        if self._logits is None:
            return self.output_layer.out_features
        return self._logits.size(-1)

    def at(self, mask: torch.Tensor) -> "CopyDistribution":
        """The distribution at the positions where ``mask`` (B, T) is True, flattened to (P,) rows
        in row-major order (as ``x[mask]``). Lazy logits are computed for those rows only."""
        if mask.dtype != torch.bool:
            raise TypeError(f"CopyDistribution.at takes a boolean mask, got {mask.dtype}")
        flat = mask.reshape(-1).nonzero().squeeze(1)  # kept positions, row-major
        rows = flat // mask[0].numel() if mask.dim() > 1 else flat  # the document of each
        lead = mask.dim()
        pick = lambda x: None if x is None else x.flatten(0, lead - 1).index_select(0, flat)  # noqa: E731
        return CopyDistribution(pick(self._logits), pick(self.gen_weight), pick(self.copy_weight),
                                self.src_ext_ids.index_select(0, rows), self.n_ext,
                                features=None if self._logits is not None else pick(self.features),
                                output_layer=self.output_layer)

    def _source_ids(self, like: torch.Tensor) -> torch.Tensor:
        """src_ext_ids broadcast to the shape of ``like`` (..., L)."""
        B, L = self.src_ext_ids.shape
        view = self.src_ext_ids.view(B, *([1] * (like.dim() - 2)), L)
        return view.expand_as(like)

    def log_probs(self, no_generation: torch.Tensor | None = None) -> torch.Tensor:
        """(..., V_ext) log-probabilities over the extended vocabulary.

        ``no_generation``: an optional (V,) bool mask of vocabulary words the generator may not
        produce; they keep only their copy mass (module docstring: copy-only words).
        """
        if no_generation is not None and no_generation.shape != (self.vocab_size,):
            raise ValueError(f"no_generation must be a ({self.vocab_size},) mask, got {tuple(no_generation.shape)}")
        if self.copy_weight is None:
            log_p = F.log_softmax(self.vocab_logits, dim=-1)
            if no_generation is not None:  # no copying: a forbidden word is impossible
                log_p = log_p.masked_fill(no_generation.to(log_p.device), torch.log(torch.tensor(_TINY)).item())
            if self.n_ext > self.vocab_size:  # no copying: OOV words are impossible
                pad = log_p.new_full((*log_p.shape[:-1], self.n_ext - self.vocab_size), torch.log(torch.tensor(_TINY)).item())
                log_p = torch.cat([log_p, pad], dim=-1)
            return log_p
        if torch.is_grad_enabled() and any(x.requires_grad for x in (self.vocab_logits, self.gen_weight,
                                                                      self.copy_weight)):
            probs = self.gen_weight.unsqueeze(-1) * F.softmax(self.vocab_logits, dim=-1)
            if no_generation is not None:
                probs = probs.masked_fill(no_generation.to(probs.device), 0.0)
            if self.n_ext > self.vocab_size:
                probs = F.pad(probs, (0, self.n_ext - self.vocab_size))
            probs = probs.scatter_add(-1, self._source_ids(self.copy_weight), self.copy_weight)
            return probs.clamp_min(_TINY).log()
        # Search and sampling (no gradients): the same numbers with two (N, V_ext) allocations
        # instead of five; every beam step runs this over ~150 x 50k entries.
        probs = F.softmax(self.vocab_logits, dim=-1).mul_(self.gen_weight.unsqueeze(-1))
        if no_generation is not None:
            probs.masked_fill_(no_generation.to(probs.device), 0.0)
        if self.n_ext > self.vocab_size:
            probs = F.pad(probs, (0, self.n_ext - self.vocab_size))
        probs.scatter_add_(-1, self._source_ids(self.copy_weight), self.copy_weight)
        return probs.clamp_min_(_TINY).log_()

    def log_prob(self, target: torch.Tensor) -> torch.Tensor:
        """(...,) log-probability of ``target`` (..., extended ids), without the full distribution."""
        V = self.vocab_size
        in_vocab = target < V
        log_p_vocab = target_log_softmax(self.vocab_logits, target.clamp_max(V - 1))
        if self.copy_weight is None:
            return torch.where(in_vocab, log_p_vocab, torch.full_like(log_p_vocab, torch.log(torch.tensor(_TINY)).item()))
        p_gen = torch.where(in_vocab, self.gen_weight * log_p_vocab.exp(), torch.zeros_like(log_p_vocab))
        hits = self._source_ids(self.copy_weight) == target.unsqueeze(-1)
        p_copy = (self.copy_weight * hits).sum(-1)
        return (p_gen + p_copy).clamp_min(_TINY).log()
