"""``LogitsLossSFTTrainer``: TRL's SFTTrainer with the loss taken from the model's own full logits.

Why it exists: TRL 1.x computes every SFT loss through its fused LM head (``trl.trainer.utils.add_fused_lm_head``,
``trl.kernels.chunked_logprob``), which never materialises the [batch, length, vocab] logits and recomputes the LM
head projection in the backward pass. That saves memory for 150k-token vocabularies on a GPU; off Triton devices it
also scores every position, padding included. For the embedded CPU model (vocab 2048: the full logits of a batch are
a few MB) it only costs time: benchmarks/sft_step.py measures the step with each loss side by side
(docs/benchmarks.md). TRL has no switch for it (``compute_loss_func`` and label smoothing run the fused forward a
second time for the metrics), so ``compute_loss`` is overridden here, and only for the plain NLL case: the loss is
transformers' causal-LM loss (sum over label tokens / tokens in the batch, the same quantity TRL's ``nll`` computes),
and the metrics TRL logs (entropy, mean_token_accuracy, num_tokens) are computed from the same logits. Every other
configuration (DFT loss, MoE aux loss, label smoothing, a custom loss, sequence parallelism) goes to TRL's own code.

The entropy and token accuracy of a training step are computed only for the steps the Trainer logs (every
``logging_steps``, the first with ``logging_first_step``, the last), so each logged value is that step's batch rather
than TRL's mean over the steps since the last log: on the embedded CPU model the two metrics cost about 6% of every
step (benchmarks/sft_step.py --compare metrics), and they never touch the gradient. Evaluation computes them on every
batch, as TRL does.
"""

from __future__ import annotations

import torch
from transformers.trainer_utils import IntervalStrategy
from trl import SFTTrainer


class LogitsLossSFTTrainer(SFTTrainer):
    """``SFTTrainer`` whose NLL loss and metrics come from the full logits (see the module docstring)."""

    def _plain_nll(self) -> bool:
        pc = getattr(self.accelerator, "parallelism_config", None)
        return (
            self.args.loss_type == "nll"
            and not self.aux_loss_enabled
            and self.label_smoother is None
            and self.compute_loss_func is None
            and not (pc is not None and getattr(pc, "sp_enabled", False))
        )

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if not self._plain_nll() or "attention_mask" not in inputs:  # padding-free batches: TRL's own path
            return super().compute_loss(
                model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch
            )
        mode = "train" if self.model.training else "eval"
        outputs = model(**inputs, use_cache=False, num_items_in_batch=num_items_in_batch)
        loss = outputs.loss
        # as Trainer.compute_loss / TRL: num_items_in_batch counts every rank's tokens and DDP averages gradients
        if self.args.average_tokens_across_devices and num_items_in_batch is not None:
            loss = loss * (self.accelerator.num_processes // self.get_tp_size())
        with torch.no_grad():
            gather = self.accelerator.gather_for_metrics
            if mode == "train":
                self._total_train_tokens += gather(inputs["attention_mask"].sum()).sum().item() // self._tp_size
            self._metrics[mode]["num_tokens"] = [self._total_train_tokens]
            if mode == "train" and not self._logs_this_step():
                return (loss, outputs) if return_outputs else loss
            labels = inputs["labels"][:, 1:]
            mask = labels != -100
            logp = outputs.logits[:, :-1].float().log_softmax(-1)
            entropy = -(logp.exp() * logp).sum(-1)
            top1 = logp.argmax(-1) == labels
            n_valid = gather(mask.sum()).sum()
            ent_sum = gather((entropy * mask).sum()).sum()
            n_correct = gather((top1 & mask).sum()).sum()
            self._metrics[mode]["entropy"].append((ent_sum / n_valid).item() if n_valid > 0 else 0.0)
            self._metrics[mode]["mean_token_accuracy"].append((n_correct / n_valid).item() if n_valid > 0 else 0.0)
        return (loss, outputs) if return_outputs else loss

    def _logs_this_step(self) -> bool:
        """Whether the optimizer step this batch belongs to is one the Trainer logs (DefaultFlowCallback's rule)."""
        args, step = self.args, self.state.global_step + 1
        if args.logging_strategy != IntervalStrategy.STEPS:
            return True
        first = step == 1 and args.logging_first_step
        return first or step % self.state.logging_steps == 0 or step >= self.state.max_steps
