"""Collaboration-aware GRPO for two role models: Planner -> Coder (``corecode grpo-team``) and MAGRPO's helper/main
pair (``corecode grpo-magrpo``).

Why not ``trl.GRPOTrainer``: it owns one policy, one prompt -> G completions group and one reward per completion. A
team needs two policies whose rollouts nest (each of the Planner's G_p plans becomes part of the prompt of the Coder's
G_c programs), a reward for one role computed from the other role's results (credit flows through the partner),
group-relative advantages at two levels, and per-role schedules (joint, or alternating stages with the other role
frozen). None of that fits its single ``_generate_and_score_completions`` / ``compute_loss`` pair. So this trainer is
assembled from the same pieces TRL itself uses: transformers models, ``generate`` and schedulers, ``torch`` AdamW,
``accelerate`` (prepare, backward, clipping, gather, save/load state with RNG), TRL's log-prob/entropy/padding helpers
and its loss arithmetic (``rollout.py``), TRL's advantage arithmetic (``advantages.py``) and its daemon event loop so
sandbox scoring of one generation chunk overlaps generation of the next.

Roles are two separate models (full fine-tune, or a LoRA adapter each: ``grpo.team.lora``, per role
``grpo.team.roles``) or one base with one LoRA adapter per role (``grpo.team.shared_base``), all loaded through
``corecode.models.factory``; with LoRA under ``bf16`` the frozen base is bf16 and only the adapters are fp32.
Checkpoints (``checkpointing.py``) make a SIGKILLed run resume exactly.
``grpo.ptx_coef`` adds InstructGPT's PPO-ptx term (the role's SFT loss in every update), which TRL does not offer and
which the embedded default needs to take GRPO steps large enough to matter without unlearning SFT.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import copy
import json
import logging
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

from corecode.agents.prompts import coder_prompt, format_code, format_plan, helper_prompt, main_prompt, planner_prompt
from corecode.data.io import read_problems
from corecode.data.schema import Problem
from corecode.generation.base import Completion
from corecode.generation.render import sft_example, use_chat
from corecode.training.advantages import group_advantages, groups_changed
from corecode.training.checkpointing import (
    claim_checkpoint_dir,
    latest_checkpoint,
    load_checkpoint,
    run_fingerprint,
    save_checkpoint,
)
from corecode.training.data_parallel import (
    DDPAccumulation,
    FSDPAccumulation,
    agree_max,
    all_reduce_gradients,
    deal,
    gather_into,
    pin_to_own_cores,
    take_host_share,
)
from corecode.training.grpo_config import MAGRPOParams, TeamGRPOParams, TwoRoleGRPOParams
from corecode.training.ptx import ptx_batch, ptx_loss, read_ptx_rows
from corecode.training.rewards import (
    ReferenceCache,
    ascore_programs,
    build_program,
    coder_reward,
    extract_code,
    extract_plan,
    magrpo_reward,
    plan_adherence,
    plan_format_ok,
    planner_reward,
    program_for,
)
from corecode.training.rollout import (
    LossConfig,
    Sample,
    completion_logprob_means,
    generate_chunks,
    mean_token_entropy,
    policy_loss_backward,
)
from corecode.training.timing import PhaseTimer, phase_names, rank_times

logger = logging.getLogger(__name__)


@dataclass
class TrainerState:
    """What a checkpoint needs besides models/optimizers/schedulers/RNG: the step (which fixes the data position)
    and the log so far. Registered with ``accelerator.register_for_checkpointing``."""

    step: int = 0
    history: list[dict] = field(default_factory=list)

    def state_dict(self) -> dict:
        return {"step": self.step, "history": json.dumps(self.history)}

    def load_state_dict(self, sd: dict) -> None:
        self.step = int(sd["step"])
        self.history = json.loads(sd["history"])


@dataclass
class Role:
    name: str
    model: torch.nn.Module
    tokenizer: object
    optimizer: torch.optim.Optimizer
    scheduler: object
    ref_model: torch.nn.Module | None
    max_new_tokens: int


class _AdapterOff:
    """The KL reference of a LoRA role: the same model with its adapter switched off."""

    def __init__(self, model):
        self.model = model

    def __call__(self, **kw):
        with self.model.disable_adapter():
            return self.model(**kw)


class _TwoRoleTrainer:
    """Shared machinery: two role models, data order, scoring loop, per-role updates, checkpoints, logging."""

    role_names: tuple[str, str] = ("a", "b")

    def __init__(
        self,
        params: TwoRoleGRPOParams,
        models: dict[str, tuple],
        train_problems: Sequence[Problem],
        sandbox,
        seed: int = 0,
        val_problems: Sequence[Problem] = (),
        accelerator=None,
        max_new_tokens: dict[str, int] | None = None,
        devices: dict[str, str | None] | None = None,
        chat: bool | None = None,
    ):
        from accelerate import Accelerator, DistributedDataParallelKwargs
        from trl.trainer.utils import start_event_loop_in_daemon

        self.cfg = params
        self.seed = seed
        self.sandbox = sandbox
        self.train_problems = list(train_problems)
        # a seeded sample of the split, not its head: a split written in blocks (dev: its longer chains first) would
        # show the in-training evaluation one kind of problem only
        val = list(val_problems)
        self.val_problems = random.Random(f"{seed}-eval").sample(val, min(len(val), params.eval_problems))
        if any(p.split == "test" for p in self.val_problems):
            raise ValueError(f"{params.val_problems}: in-training evaluation reads the dev split, never test problems")
        self.acc = accelerator or Accelerator(
            mixed_precision="bf16" if params.bf16 else "no",
            # ranks run different numbers of forward passes (data_parallel): no per-forward buffer broadcast
            kwargs_handlers=[DistributedDataParallelKwargs(broadcast_buffers=False)],
        )
        self.fsdp = self.acc.distributed_type.value == "FSDP"
        self.ddp = self.acc.num_processes > 1 and not self.fsdp
        self._check_distribution()
        self.state = TrainerState()
        self.references = ReferenceCache(sandbox)
        self.roles: dict[str, Role] = {}
        # bf16, full fine-tune: fp32 master weights trained under accelerate's bf16 autocast, and per role a bf16
        # copy of the policy that does all sampling, refreshed after every optimizer step (what TRL does for its vLLM
        # sampler). Training the bf16 weights themselves (AdamW on bf16) broke within a few steps on the GPU profile,
        # and the fp32 model under autocast cannot generate with a static KV cache (cache dtype fp32, k/v bf16).
        # bf16 with LoRA: the frozen base is bf16 (cast here if it was loaded in fp32), peft keeps the adapter fp32
        # (the only master weights), and the model samples itself: no copy, except under FSDP, where an unsharded copy
        # of the base and the adapter samples (its adapter refreshed after every update, as the bf16 copy).
        self.samplers: dict[str, torch.nn.Module] = {}
        self.devices: dict[str, torch.device] = {}
        self.shared = self._shared_base(models) if params.shared_base else None  # one base, one adapter per role
        for name in self.role_names:
            dev = None if self.shared is not None else (devices or {}).get(name)  # a shared base stays where it is
            self.roles[name] = self._prepare_role(name, models, dev, max_new_tokens or {})
        # Per role: prompts through the chat template or not (generation.use_chat_template, null = the tokenizer
        # decides), as evaluation renders them (corecode.generation.render).
        self.chat = {name: use_chat(r.tokenizer, chat) for name, r in self.roles.items()}
        self.ptx_rows = self._load_ptx_rows() if params.has_ptx else {}
        self.acc.register_for_checkpointing(self.state)
        self._loop_thread, self._loop, ready = start_event_loop_in_daemon(name="corecode-sandbox-scoring")
        ready.wait()
        self.loss_cfg = LossConfig(
            params.loss_type,
            params.beta,
            params.epsilon,
            params.epsilon_high if params.epsilon_high is not None else params.epsilon,
            params.temperature,
            0,
        )
        self.timer = PhaseTimer()  # per-step phase times of this rank (corecode.training.timing)
        self.phases = phase_names(self.role_names)
        self.after_step_s = 0.0  # the last step's logging, evaluation and checkpoint, reported with the next step
        self._log_rows: list[str] = []  # the log file's rows, serialised once each

    def _check_distribution(self) -> None:
        """Refuse the distributed setups the trainer does not support, before any model is touched."""
        params = self.cfg
        if self.acc.distributed_type.value == "DEEPSPEED" or (self.fsdp and not self.acc.is_fsdp2):
            raise ValueError(
                "grpo-team runs in one process, under DDP, or under FSDP2 (accelerate fsdp_version: 2; "
                "see configs/accelerate/fsdp.yaml), not under DeepSpeed or FSDP1"
            )
        if self.fsdp and not params.bf16:
            raise ValueError(
                "grpo-team under FSDP needs bf16: true: rollouts are sampled from an unsharded copy per role (bf16, "
                "or the bf16 base and its adapter with LoRA), since sampling with the sharded policy would need every "
                "rank to run the same number of forward passes"
            )
        if self.fsdp and params.compile_model:
            raise ValueError("compile_model: true runs in one process or under DDP, not under FSDP2 (set it to false)")

    def _shared_base(self, models: dict[str, tuple]):
        """``shared_base``: the first role's model as one base carrying a LoRA adapter per role (the roles' own
        SFT adapters when it is a ``PeftModel`` already)."""
        from peft import PeftModel, get_peft_model

        from corecode.models.lora import lora_config

        params = self.cfg
        if not all(params.role_model(role).lora.enabled for role in self.role_names):
            raise ValueError("shared_base needs lora.enabled: true (one LoRA adapter per role on one base)")
        if self.fsdp:
            raise ValueError("shared_base runs in one process or under DDP; under FSDP2 use separate role models")
        base, _ = models[self.role_names[0]]
        if isinstance(base, PeftModel):  # the roles' own adapters on one base (_run: SFT adapter directories)
            shared = base
        else:
            if params.bf16:
                base.to(torch.bfloat16)
            first, second = self.role_names
            shared = get_peft_model(base, lora_config(params.role_model(first).lora), adapter_name=first)
            shared.add_adapter(second, lora_config(params.role_model(second).lora))
        if getattr(shared.config, "tie_word_embeddings", False) and any(
            c.modules_to_save for c in shared.peft_config.values()
        ):  # peft 0.21 ties only the first adapter's embedding copy to the LM head (the other's reads the base's)
            raise ValueError(
                "shared_base with lora.modules_to_save (the section's, or sft.lora's in the SFT adapters) on a "
                "model whose LM head is tied to its embedding: peft ties only one adapter's copy to the LM head; "
                "set shared_base: false (a model per role) or modules_to_save: []"
            )
        return shared

    def _prepare_role(self, name: str, models: dict[str, tuple], dev: str | None, max_new_tokens: dict) -> Role:
        """One role's policy (LoRA-wrapped where asked), its reference for the KL term, its sampler, optimizer and
        schedule, prepared by accelerate. Under ``shared_base`` the second role reuses the first's prepared model."""
        from peft import get_peft_model
        from transformers import get_scheduler

        from corecode.models.factory import compile_decoder_layers, enable_gradient_checkpointing
        from corecode.models.lora import lora_config

        params = self.cfg
        role_cfg = params.role_model(name)
        model, tok = models[name] if self.shared is None else (self.shared, models[self.role_names[0]][1])
        if tok.pad_token_id is None:
            tok.pad_token = tok.eos_token
        if role_cfg.gradient_checkpointing:
            enable_gradient_checkpointing(model)
        if dev is not None:
            model.to(dev)
        ref = None
        if self.shared is not None:
            train_params = [w for n, w in model.named_parameters() if f".{name}." in n and _adapter_weight(n)]
            for weight in train_params:
                weight.requires_grad_(True)
        else:
            if role_cfg.lora.enabled:
                if params.bf16:
                    model.to(torch.bfloat16)
                model = get_peft_model(model, lora_config(role_cfg.lora))
            elif role_cfg.beta:
                ref = copy.deepcopy(model).eval().requires_grad_(False)
                if dev is None:
                    ref.to(self.acc.device)
            train_params = [w for w in model.parameters() if w.requires_grad]
        if role_cfg.lora.enabled and role_cfg.beta:
            ref = _AdapterOff(model)  # the frozen base is the SFT policy: no second copy needed
        if params.bf16 and not role_cfg.lora.enabled:
            self.samplers[name] = self._bf16_sampler(model, dev)
        elif self.fsdp:  # LoRA: the base (already bf16) and the fp32 adapter as they are
            self.samplers[name] = copy.deepcopy(model).to(dev or self.acc.device).eval().requires_grad_(False)
        self.devices[name] = torch.device(dev) if dev is not None else self.acc.device
        # On a GPU the fused AdamW: the update's arithmetic in one kernel per chunk of tensors, where the default
        # (foreach) launches one per arithmetic step; launches are what a host slows when several GPUs train at
        # once (docs/gpu.md, "Several GPUs").
        fused = self.devices[name].type == "cuda"
        opt = torch.optim.AdamW(
            train_params, lr=role_cfg.learning_rate, weight_decay=params.weight_decay, fused=fused or None
        )
        sch = get_scheduler(
            params.lr_scheduler_type,
            opt,
            num_warmup_steps=params.warmup_steps,
            num_training_steps=params.max_steps * params.num_iterations,
        )
        if self.shared is not None and self.roles:  # the base the first role prepared: one DDP wrapper for both
            model = next(iter(self.roles.values())).model  # adapters, not a second reducer on the same weights
            opt, sch = self.acc.prepare(opt, sch)
        else:
            model, opt, sch = self.acc.prepare(model, opt, sch, device_placement=[dev is None] * 3)
            if params.compile_model:
                compile_decoder_layers(self.acc.unwrap_model(model))
        model.train()
        return Role(name, model, tok, opt, sch, ref, max_new_tokens.get(name, 128))

    def _load_ptx_rows(self) -> dict[str, list[dict]]:
        """The SFT rows of every role this run updates that has a dataset in ptx_data, read once."""
        out = {}
        for role in self.role_names:
            path = self.cfg.ptx_data.get(role)
            if role not in self.cfg.frozen_roles and path is not None:
                out[role] = read_ptx_rows(path, role)
        return out

    def ptx_backward(self, role: str, backward=None) -> float:
        """Accumulate ``ptx_coef`` x the language-modelling loss of the step's batch of the role's SFT rows
        (``corecode.training.ptx``), through ``backward`` (default: the accelerator's)."""
        r = self.roles[role]
        batch = ptx_batch(
            self.ptx_rows[role], self.cfg.ptx_batch_size, self.seed, role, self.state.step, self.acc.process_index
        )
        config = self.acc.unwrap_model(r.model).config
        loss = ptx_loss(r.model, r.tokenizer, batch, self.chat[role], getattr(config, "max_position_embeddings", None))
        (backward or self.acc.backward)(self.cfg.ptx_coef * loss)
        return float(loss.detach())

    def _bf16_sampler(self, model: torch.nn.Module, device) -> torch.nn.Module:
        """A frozen bf16 copy of ``model`` (before ``accelerator.prepare`` wraps its forward in autocast)."""
        sampler = copy.deepcopy(model).to(device if device is not None else self.acc.device, torch.bfloat16)
        return sampler.eval().requires_grad_(False)

    @torch.no_grad()
    def sync_sampler(self, role: str) -> None:
        """Copy ``role``'s trainable fp32 weights into its bf16 sampling copy (no-op without bf16)."""
        sampler = self.samplers.get(role)
        if sampler is None:
            return
        master = self.acc.unwrap_model(self.roles[role].model)
        pairs = zip(master.parameters(), sampler.parameters(), strict=True)
        trained = [(src, dst) for src, dst in pairs if src.requires_grad]
        # FSDP2 shards are DTensors: gathered in buckets, in the copy's dtype (every rank calls this in the same order)
        gather_into([src for src, _ in trained], [dst for _, dst in trained])

    def activate(self, role: str) -> None:
        """With a shared base, route forward passes through ``role``'s adapter (a no-op for separate models)."""
        if self.shared is not None:
            self.shared.set_adapter(role)
            for n, weight in self.shared.named_parameters():  # set_adapter freezes the other adapter: keep both
                if _adapter_weight(n):
                    weight.requires_grad_(True)
            if role in self.samplers:
                self.samplers[role].set_adapter(role)

    # -- data ---------------------------------------------------------------------------------------------------------
    def batch_problems(self, step: int) -> list[Problem]:
        """The problems of ``step`` for this process: the step's ``problems_per_step`` x processes problems from an
        epoch-wise seeded permutation, so the data position is a pure function of the step (nothing else to
        checkpoint), dealt to the processes by prompt length (``data_parallel.deal``: about as much prompt each)."""
        n, ranks = len(self.train_problems), self.acc.num_processes
        start = step * ranks * self.cfg.problems_per_step
        orders: dict[int, list[int]] = {}  # a step spans one epoch or two; a permutation of 10,000 takes ~5 ms
        step_problems = []
        for pos in range(start, start + ranks * self.cfg.problems_per_step):
            epoch, k = divmod(pos, n)
            if epoch not in orders:
                orders[epoch] = random.Random(f"{self.seed}-{epoch}").sample(range(n), n)
            step_problems.append(self.train_problems[orders[epoch][k]])
        return deal(step_problems, ranks, self.acc.process_index, size=lambda problem: len(problem.prompt))

    def updating(self, step: int) -> list[str]:
        """Roles updated at ``step``: both (joint) or one per stage (alternate, first role first)."""
        if self.cfg.schedule == "joint":
            roles = list(self.role_names)
        else:
            roles = [self.role_names[(step // self.cfg.alternate_every) % 2]]
        return [r for r in roles if r not in self.cfg.frozen_roles]

    # -- sandbox ------------------------------------------------------------------------------------------------------
    def submit(self, items: list[tuple[Problem, str | None]]) -> concurrent.futures.Future:
        """Start scoring in the background loop; generation continues meanwhile."""
        import asyncio

        return asyncio.run_coroutine_threadsafe(ascore_programs(self.sandbox, items), self._loop)

    def wait(self, futures: list[concurrent.futures.Future], timer: dict) -> list:
        t = time.perf_counter()
        with self.timer.phase("scoring", self.acc.device):
            out = [r for f in futures for r in f.result()]
        timer["sandbox_wait_s"] = timer.get("sandbox_wait_s", 0.0) + time.perf_counter() - t
        return out

    def references_for(self, problems: Sequence[Problem], needed: bool) -> dict:
        if not needed:
            return {}
        import asyncio

        with self.timer.phase("scoring", self.acc.device):
            return asyncio.run_coroutine_threadsafe(self.references.aget(problems), self._loop).result()

    def sample(self, role: str, prompts: list[str], n: int, greedy: bool = False):
        self.activate(role)
        r = self.roles[role]
        model = self.samplers[role] if role in self.samplers else self.acc.unwrap_model(r.model)
        chunks = generate_chunks(
            model,
            r.tokenizer,
            prompts,
            n,
            r.max_new_tokens,
            self.cfg.role_model(role).temperature,
            self.cfg.top_p,
            self.cfg.generation_batch_size,
            do_sample=not greedy,
            static_cache=self.cfg.static_cache,
            lean_decode=self.cfg.lean_decode,
            chat=self.chat[role],
            fixed_length=self.cfg.fixed_length and not greedy,
        )
        return self.timer.timed(f"{role}_generation", chunks, self.devices[role])

    def gather(self, values: torch.Tensor) -> torch.Tensor:
        """All processes' values (for logging); collectives need the tensor on the accelerator's device. A rank that
        reaches the first gather of a step early waits there for the slowest one: the ``wait`` phase."""
        with self.timer.phase("wait", self.acc.device):
            return self.acc.gather(values.to(self.acc.device)).cpu()

    # -- update -------------------------------------------------------------------------------------------------------
    def update(
        self, role: str, samples: list[Sample] | None, advantages: torch.Tensor | None, record_old: bool = False
    ) -> dict[str, float]:
        """One optimizer step of ``role``: forward/backward of every micro-batch (under DDP without synchronising),
        one gradient all-reduce (DDP; FSDP reduce-scatters inside backward), clipping, the step, the sampler refresh;
        each timed as a phase (corecode.training.timing). The role's GPU is the current CUDA device meanwhile: Triton
        kernels (TRL's fused log-softmax) launch on the current device, so with the roles on two GPUs
        (``planner_device`` / ``coder_device``) the other role's would get tensors of a device they cannot read."""
        device = self.devices[role]
        with torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext():
            return self._update(role, samples, advantages, record_old)

    def role_loss_config(self, role: str):
        """The GRPO loss settings of ``role``'s update: the trainer's, with the role's completion length, KL weight
        and sampling temperature."""
        loss_cfg = copy.copy(self.loss_cfg)
        loss_cfg.max_completion_length = self.roles[role].max_new_tokens
        role_cfg = self.cfg.role_model(role)
        loss_cfg.beta, loss_cfg.temperature = role_cfg.beta, role_cfg.temperature
        return loss_cfg

    def _update(
        self, role: str, samples: list[Sample] | None, advantages: torch.Tensor | None, record_old: bool
    ) -> dict[str, float]:
        self.activate(role)
        r = self.roles[role]
        device = self.devices[role]
        stats: dict[str, float] = {}
        # DDP: accumulate every backward of the update locally and all-reduce once, after the backward (or, with
        # overlap_allreduce and a wrapper per role, inside its last pass); FSDP2 with fsdp_accumulate: accumulate
        # unsharded, reduce-scatter in the update's last backward (corecode.training.data_parallel)
        ptx_passes = int(role in self.ptx_rows)
        schedule = None
        if self.fsdp and self.cfg.fsdp_accumulate:
            schedule = FSDPAccumulation(r.model, self.acc.backward, ptx_passes)
        elif self.ddp and self.cfg.overlap_allreduce and self.shared is None:
            schedule = DDPAccumulation(r.model, self.acc.backward, ptx_passes)
        backward = schedule.backward if schedule is not None else self.acc.backward

        def agree(count: int) -> int:
            runs = agree_max(count, self.acc.device)
            return schedule.expect(runs) if schedule is not None else runs

        if schedule is not None:
            accumulate = schedule
        elif self.ddp:
            accumulate = getattr(r.model, "no_sync", contextlib.nullcontext)()
        else:
            accumulate = contextlib.nullcontext()
        with self.timer.phase(f"{role}_backward", device), accumulate:
            if samples is not None:  # None: the ptx-only control (rl_coef 0), whose update is the ptx term alone
                stats = policy_loss_backward(
                    r.model,
                    samples,
                    advantages * self.cfg.rl_coef,
                    self.role_loss_config(role),
                    r.tokenizer.pad_token_id,
                    self.cfg.micro_batch_size,
                    r.ref_model,
                    backward=backward,
                    skip_zero_advantage=self.cfg.skip_zero_advantage,
                    record_old=record_old,
                    agree=agree if self.fsdp or schedule is not None else None,
                )
            if role in self.ptx_rows:
                stats["ptx_loss"] = self.ptx_backward(role, backward)
        if self.ddp and schedule is None:
            with self.timer.phase(f"{role}_allreduce", device):
                all_reduce_gradients([w for group in r.optimizer.param_groups for w in group["params"]])
        with self.timer.phase(f"{role}_optimizer", device):
            stats = self._step(role, stats)
        if not stats["skipped_update"]:
            with self.timer.phase(f"{role}_sampler_sync", device):
                self.sync_sampler(role)
        return stats

    def _step(self, role: str, stats: dict[str, float]) -> dict[str, float]:
        """Clip, then step the optimizer and scheduler, or skip a non-finite update."""
        r = self.roles[role]
        if self.fsdp:  # accelerate's FSDP clip_grad_norm_ looks the model up with `==` on parameter lists, which
            # fails once two FSDP2 models are prepared; torch's clip works on the DTensor shards directly
            norm = torch.nn.utils.clip_grad_norm_(r.model.parameters(), self.cfg.max_grad_norm)
            stats["grad_norm"] = float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)
        else:
            stats["grad_norm"] = float(self.acc.clip_grad_norm_(r.model.parameters(), self.cfg.max_grad_norm))
        stats["skipped_update"] = float(not math.isfinite(stats["grad_norm"]))
        if stats["skipped_update"]:  # as torch.amp's GradScaler does: never let one inf/NaN gradient into the weights
            bad = [n for n, w in r.model.named_parameters() if w.grad is not None and not w.grad.isfinite().all()]
            logger.warning(
                "%s: non-finite gradient norm at step %d, update skipped (%d tensors, first: %s)",
                role,
                self.state.step + 1,
                len(bad),
                bad[:4],
            )
            r.optimizer.zero_grad(set_to_none=True)
            r.scheduler.step()
            stats["lr"] = r.scheduler.get_last_lr()[0]
            return stats
        r.optimizer.step()
        r.scheduler.step()
        r.optimizer.zero_grad(set_to_none=True)
        stats["lr"] = r.scheduler.get_last_lr()[0]
        return stats

    # -- to implement -------------------------------------------------------------------------------------------------
    def rollout(
        self, problems: list[Problem], timer: dict
    ) -> tuple[dict[str, tuple[list[Sample], torch.Tensor]], dict[str, float]]:
        raise NotImplementedError

    def evaluate(self) -> dict[str, float]:
        return {}

    # -- loop ---------------------------------------------------------------------------------------------------------
    def train_step(self) -> dict[str, float]:
        step = self.state.step
        t0 = time.perf_counter()
        self.timer.start()
        timer: dict[str, float] = {}
        if self.cfg.rl_coef:
            per_role, metrics = self.rollout(self.batch_problems(step), timer)
        else:  # the ptx-only control: no rollouts; each role with ptx data takes the ptx step of the GRPO run
            per_role, metrics = {role: (None, None) for role in self.ptx_rows}, {}
        iterations = self.cfg.num_iterations
        for role in self.updating(step):
            if role not in per_role:
                continue
            samples, adv = per_role[role]
            for it in range(iterations):  # several optimizer steps on one batch: stats are their means
                for k, v in self.update(role, samples, adv, record_old=iterations > 1 and it == 0).items():
                    metrics[f"{role}/{k}"] = metrics.get(f"{role}/{k}", 0.0) + v / iterations
        times = self.timer.finish()  # waits for the step's GPU work: the step time below includes all of it
        dt = time.perf_counter() - t0
        times["log_checkpoint"] = self.after_step_s
        new_tokens = sum(s.completion.num_tokens for samples, _ in per_role.values() for s in samples or ())
        metrics.update(
            step_time_s=dt,
            tokens_per_s=new_tokens / dt,
            generation_s=timer.get("generation_s", 0.0),
            sandbox_time_share=timer.get("sandbox_wait_s", 0.0) / dt,
        )
        metrics.update(rank_times(self.acc, self.phases, times, dt))
        self.state.step = step + 1
        return metrics

    def log(self, metrics: dict[str, float]) -> None:
        try:
            import mlflow
        except ImportError:  # a host without MLflow (tracking.enabled: false, e.g. the GPU image): file log only
            mlflow = None

        row = {"step": self.state.step, **{k: float(v) for k, v in metrics.items()}}
        self.state.history.append(row)
        if not self.acc.is_main_process:
            return
        if mlflow is not None and mlflow.active_run() is not None:  # queued: MLflow writes from its own thread
            mlflow.log_metrics(
                {k.replace("/", "_"): v for k, v in row.items() if k != "step" and math.isfinite(v)},
                step=self.state.step,
                synchronous=False,
            )
        # Each row is serialised once (a resumed run's earlier rows on its first write), so writing the log costs
        # its length in bytes, not re-encoding every row at every step while the other ranks wait.
        if len(self._log_rows) != len(self.state.history) - 1:
            self._log_rows = [json.dumps(r) for r in self.state.history[:-1]]
        self._log_rows.append(json.dumps(row))
        path = Path(self.cfg.log_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[\n" + ",\n".join(self._log_rows) + "\n]\n")

    def resume(self) -> Path | None:
        """Load the newest complete checkpoint of ``checkpoint_dir`` (if ``resume``); returns its path."""
        ckpt = latest_checkpoint(self.cfg.checkpoint_dir) if self.cfg.resume else None
        if ckpt is not None:
            load_checkpoint(self.acc, ckpt)
            for role in self.role_names:
                self.sync_sampler(role)
            logger.warning("resumed from %s at step %d", ckpt, self.state.step)
        return ckpt

    def train(self, progress: bool = True) -> dict[str, float]:
        """Run to ``max_steps`` (from the last checkpoint if resuming); returns the final evaluation metrics."""
        from tqdm.auto import tqdm

        bar = tqdm(
            total=self.cfg.max_steps,
            initial=self.state.step,
            desc="team GRPO",
            disable=not progress or not self.acc.is_main_process,
        )
        while self.state.step < self.cfg.max_steps:
            metrics = self.train_step()
            t = time.perf_counter()
            s = self.state.step
            if self.cfg.eval_steps and s % self.cfg.eval_steps == 0 and s < self.cfg.max_steps:
                metrics.update(self.evaluate())
            self.log(metrics)
            bar.update(1)
            bar.set_postfix({k: f"{v:.3g}" for k, v in metrics.items() if k.startswith("reward/")})
            if s % self.cfg.save_steps == 0 and s < self.cfg.max_steps:
                save_checkpoint(self.acc, self.cfg.checkpoint_dir, s, self.cfg.save_total_limit)
            self.after_step_s = time.perf_counter() - t
        bar.close()
        final = self.evaluate()
        if final:
            self.log(final)
        if self.acc.is_main_process:
            _flush_mlflow()
        return final

    def save_models(self, outputs: dict[str, str]) -> None:
        self.acc.wait_for_everyone()
        if self.fsdp:  # gathering the full state dict is a collective: every rank takes part, rank 0 writes
            full = [name for name in outputs if not self.cfg.role_model(name).lora.enabled]
            states = {name: self.acc.get_state_dict(self.roles[name].model) for name in full}
            if self.acc.is_main_process:
                for name, out in outputs.items():
                    if name in states:
                        self.acc.unwrap_model(self.roles[name].model).save_pretrained(out, state_dict=states[name])
                    else:  # LoRA: the unsharded sampling copy holds the base and the adapter as trained
                        copy.deepcopy(self.samplers[name]).merge_and_unload().save_pretrained(out)
                    self.roles[name].tokenizer.save_pretrained(out)
            return
        if not self.acc.is_main_process:
            return
        for name, out in outputs.items():
            r = self.roles[name]
            model = self.acc.unwrap_model(r.model)
            if self.cfg.role_model(name).lora.enabled:  # outputs are plain checkpoints: the adapter merged in a copy
                model = copy.deepcopy(model)
                if self.shared:  # peft unloads modules_to_save as the active adapter's copy
                    model.set_adapter(name)
                model = model.merge_and_unload(adapter_names=[name] if self.shared else None)
            model.save_pretrained(out)
            r.tokenizer.save_pretrained(out)

    def close(self) -> None:
        from trl.trainer.utils import shutdown_event_loop_in_daemon

        shutdown_event_loop_in_daemon(self._loop_thread, self._loop)


def _flush_mlflow() -> None:
    """Wait until MLflow has written the metrics queued by ``log`` (they must be in the run before it ends)."""
    try:
        import mlflow
    except ImportError:
        return
    if mlflow.active_run() is not None:
        mlflow.flush_async_logging()


def _adapter_weight(name: str) -> bool:
    """A weight an adapter trains: its LoRA matrices or its copy of a ``lora.modules_to_save`` module."""
    return "lora_" in name or ".modules_to_save." in name


def pool_identical(rewards: torch.Tensor, texts: Sequence[str], group_size: int) -> torch.Tensor:
    """Within each consecutive group of ``group_size``, every element gets the mean reward of the group's elements
    with the same text (``grpo.team.pool_identical_plans``: one value per distinct plan of a problem)."""
    out = rewards.clone().float()
    for start in range(0, len(texts), group_size):
        by_text: dict[str, list[int]] = {}
        for i in range(start, start + group_size):
            by_text.setdefault(texts[i], []).append(i)
        for idx in by_text.values():
            out[idx] = rewards[idx].float().mean()
    return out


def duplicate_positions(texts: Sequence[str]) -> list[int]:
    """Positions of ``texts`` whose text repeats an earlier one's (the first copy of each text is not listed)."""
    seen: set[str] = set()
    out = []
    for i, text in enumerate(texts):
        if text in seen:
            out.append(i)
        seen.add(text)
    return out


def resample_duplicates(groups: list[list[Sample]], resample: Callable[[list[int]], list[Sample]], tries: int) -> int:
    """``grpo.team.distinct_plan_tries``: in place, for up to ``tries`` rounds, replace every sample of a group whose
    stripped text repeats an earlier sample's of the same group by a new one, ``resample(group indices)`` giving one
    sample per listed group (a group index once per duplicate); stop early once every group is distinct. Returns
    the number of samples drawn again."""
    drawn = 0
    for _ in range(tries):
        dups = [
            (g, j)
            for g, group in enumerate(groups)
            for j in duplicate_positions([s.completion.text.strip() for s in group])
        ]
        if not dups:
            break
        new = resample([g for g, _ in dups])
        for (g, j), sample in zip(dups, new, strict=True):
            groups[g][j] = sample
        drawn += len(dups)
    return drawn


def plan_outcomes(passed: torch.Tensor, n_programs: int) -> dict[str, float]:
    """The Planner's view of a rollout from ``passed`` (1.0 / 0.0 per program, consecutive groups of ``n_programs``
    per plan): plan accuracy (share of a plan's programs that pass, averaged over plans), the share of plans with a
    passing program, and the share of plans whose programs all pass or all fail (no pass/fail contrast among them)."""
    per_plan = passed.float().view(-1, n_programs)
    share = per_plan.mean(1)
    return {
        "planner/plan_accuracy": float(share.mean()),
        "planner/plan_any_pass": float((share > 0).float().mean()),
        "planner/uniform_plan_frac": float(((share == 0) | (share == 1)).float().mean()),
    }


def coder_rewards_of(
    problems: list[Problem], results: list, refs: dict, adherence: list[float], weights
) -> torch.Tensor:
    """Each program's :func:`coder_reward` under ``weights``, with its problem's reference run (``refs`` by task id)."""
    return torch.tensor(
        [
            coder_reward(res, weights, refs.get(prob.task_id), adh)
            for prob, res, adh in zip(problems, results, adherence)
        ]
    )


@dataclass
class TeamScores:
    """What a team rollout scored: per program (flat, ``num_programs`` a plan) and per plan (flat, ``num_plans`` a
    problem), with each role's group-relative advantages and zero-variance masks."""

    program_problems: list[Problem]
    refs: dict
    adherence: list[float]
    likelihoods: dict[int, float]
    coder_rewards: torch.Tensor
    planner_rewards: torch.Tensor
    coder_adv: torch.Tensor
    coder_zero: torch.Tensor
    planner_adv: torch.Tensor
    planner_zero: torch.Tensor


def _stats(prefix: str, values: torch.Tensor) -> dict[str, float]:
    values = values.float()
    return {f"{prefix}_mean": float(values.mean()), f"{prefix}_std": float(values.std()) if values.numel() > 1 else 0.0}


class TeamGRPOTrainer(_TwoRoleTrainer):
    """Planner samples G_p plans per problem; the Coder samples G_c programs per plan; the sandbox scores them.
    Advantages: plans within a problem, programs within a plan."""

    role_names = ("planner", "coder")

    def __init__(
        self,
        params: TeamGRPOParams,
        planner,
        coder,
        train_problems,
        sandbox,
        seed=0,
        val_problems=(),
        accelerator=None,
        chat: bool | None = None,
    ):
        super().__init__(
            params,
            {"planner": planner, "coder": coder},
            train_problems,
            sandbox,
            seed,
            val_problems,
            accelerator,
            {"planner": params.max_plan_tokens, "coder": params.max_code_tokens},
            {"planner": params.planner_device, "coder": params.coder_device},
            chat,
        )

    @staticmethod
    def plan_for_coder(text: str) -> str | None:
        ex = extract_plan(text)
        return ex.value if ex.ok else (text.strip() or None)

    def rollout(self, problems, timer):
        t = time.perf_counter()
        plans, redrawn, guided = self.sample_plans(problems)
        flat_plans = [(prob, s) for prob, group in zip(problems, plans) for s in group]
        programs, futures = self.sample_programs(flat_plans)
        timer["generation_s"] = time.perf_counter() - t
        results = self.wait(futures, timer)
        scores = self.score_rollout(problems, flat_plans, programs, results)
        plan_samples = [s for _, s in flat_plans]
        metrics = self.rollout_metrics(problems, plans, programs, results, scores, redrawn, guided)
        return {"planner": (plan_samples, scores.planner_adv), "coder": (programs, scores.coder_adv)}, metrics

    def score_rollout(
        self, problems: Sequence[Problem], flat_plans: list[tuple[Problem, Sample]], programs: list[Sample], results
    ) -> TeamScores:
        """Each program's reward, each plan's reward through its programs (credit through the partner) and both
        roles' group-relative advantages: plans within a problem, programs within a plan."""
        cfg = self.cfg
        n_plans, n_programs = cfg.num_plans, cfg.num_programs
        weights = cfg.coder_reward
        refs = self.references_for(problems, bool(weights.time or weights.memory or cfg.planner_reward.time))
        program_problems = [prob for prob, _ in flat_plans for _ in range(n_programs)]
        plan_texts = [self.plan_for_coder(s.completion.text) for _, s in flat_plans for _ in range(n_programs)]
        adherence = [
            plan_adherence(plan, extract_code(s.completion.text, prob).value)  # logged even at weight 0
            for plan, s, prob in zip(plan_texts, programs, program_problems)
        ]
        coder_rewards = coder_rewards_of(program_problems, results, refs, adherence, weights)
        likelihoods = self.reference_likelihoods(flat_plans) if cfg.planner_reward.coder_likelihood else {}
        planner_rewards = torch.tensor(
            [
                planner_reward(
                    s.completion.text,
                    coder_rewards[i * n_programs : (i + 1) * n_programs].tolist(),
                    results[i * n_programs : (i + 1) * n_programs],
                    cfg.planner_reward,
                    refs.get(prob.task_id),
                    likelihoods.get(i),
                )
                for i, (prob, s) in enumerate(flat_plans)
            ]
        )
        if cfg.pool_identical_plans:
            texts = [s.completion.text.strip() for _, s in flat_plans]
            planner_rewards = pool_identical(planner_rewards, texts, n_plans)
        planner_adv, planner_zero = group_advantages(planner_rewards, n_plans, cfg.scale_rewards)
        coder_adv, coder_zero = group_advantages(coder_rewards, n_programs, cfg.scale_rewards)
        return TeamScores(
            program_problems, refs, adherence, likelihoods, coder_rewards, planner_rewards,
            coder_adv, coder_zero, planner_adv, planner_zero,
        )  # fmt: skip

    def rollout_metrics(
        self,
        problems: Sequence[Problem],
        plans: list[list[Sample]],
        programs: list[Sample],
        results: list,
        scores: TeamScores,
        redrawn: int,
        guided: list[Sample],
    ) -> dict[str, float]:
        """The step's log: rewards, pass rates, the Planner's plan accuracy, entropy, zero-variance groups and plan
        diversity, gathered over ranks (every rank gathers the same keys: a gather is a collective)."""
        cfg = self.cfg
        n_plans, n_programs = cfg.num_plans, cfg.num_programs
        distinct = torch.tensor(
            [float(not duplicate_positions([s.completion.text.strip() for s in group])) for group in plans]
        )
        plan_samples = [s for group in plans for s in group]
        guided_ids = {id(g) for g in guided}
        own_plans = [s for s in plan_samples if id(s) not in guided_ids]  # what the Planner sampled
        passed = torch.tensor([float(r is not None and r.passed) for r in results])
        gathered = {
            k: self.gather(v)
            for k, v in dict(
                planner_rewards=scores.planner_rewards,
                coder_rewards=scores.coder_rewards,
                passed=passed,
                adherence=torch.tensor(scores.adherence),
                distinct=distinct,
                redrawn=torch.tensor([redrawn / max(len(problems), 1)]),
                # only when on (every rank alike: a gather is a collective)
                **(
                    {"guided": torch.tensor([len(guided) / max(len(problems), 1) / cfg.gold_plans])}
                    if cfg.gold_plans
                    else {}
                ),
            ).items()
        }
        metrics = {
            "reward/planner": float(gathered["planner_rewards"].mean()),
            "reward/coder": float(gathered["coder_rewards"].mean()),
            "pass_rate/coder": float(gathered["passed"].mean()),
            **plan_outcomes(gathered["passed"], n_programs),
            "planner/sample_entropy": self.sample_entropy("planner", own_plans),
            "coder/plan_adherence": float(gathered["adherence"].mean()),
            "plan_format_rate": sum(plan_format_ok(s.completion.text) for s in own_plans) / len(own_plans),
            "planner/adv_std": float(scores.planner_adv.std()),
            "coder/adv_std": float(scores.coder_adv.std()),
            "planner/zero_std_frac": float(scores.planner_zero.view(-1, n_plans)[:, 0].float().mean()),
            "coder/zero_std_frac": float(scores.coder_zero.view(-1, n_programs)[:, 0].float().mean()),
            "planner/distinct_plan_frac": float(gathered["distinct"].mean()),
            "planner/redrawn_plans": float(gathered["redrawn"].mean()),
            **({"planner/gold_guided_frac": float(gathered["guided"].mean())} if cfg.gold_plans else {}),
        }
        if cfg.planner_reward.coder_likelihood:  # every rank alike: a gather is a collective
            likelihoods = scores.likelihoods
            total = self.gather(torch.tensor([[sum(likelihoods.values()), float(len(likelihoods))]])).sum(0)
            metrics["planner/reference_logprob"] = float(total[0] / total[1]) if total[1] else 0.0
        metrics.update(
            self.efficiency_term_shares(
                scores.program_problems, results, scores.refs, scores.adherence, scores.coder_rewards
            )
        )
        metrics.update(_stats("planner/completion_len", torch.tensor([s.completion.num_tokens for s in plan_samples])))
        metrics.update(_stats("coder/completion_len", torch.tensor([s.completion.num_tokens for s in programs])))
        return metrics

    def sample_plans(self, problems: Sequence[Problem]) -> tuple[list[list[Sample]], int, list[Sample]]:
        """``num_plans`` plans a problem; duplicates redrawn (``distinct_plan_tries``) and gold plans put in
        (``gold_plans``) where asked. Returns the groups, the number of plans redrawn and the gold ones put in."""
        cfg = self.cfg
        prompts = [planner_prompt(x) for x in problems]
        plans = [group for chunk in self.sample("planner", prompts, cfg.num_plans) for group in chunk]
        redrawn = 0
        if cfg.distinct_plan_tries and cfg.num_plans > 1:
            redrawn = resample_duplicates(
                plans,
                lambda idx: [g[0] for chunk in self.sample("planner", [prompts[i] for i in idx], 1) for g in chunk],
                cfg.distinct_plan_tries,
            )
        guided = self.insert_gold_plans(problems, plans) if cfg.gold_plans else []
        return plans, redrawn, guided

    def sample_programs(self, flat_plans: list[tuple[Problem, Sample]]) -> tuple[list[Sample], list]:
        """``num_programs`` programs a plan, each chunk sent to the sandbox as soon as it is sampled, so that scoring
        overlaps the next chunk's generation. Returns the programs in plan order and the chunks' futures."""
        n_programs = self.cfg.num_programs
        coder_prompts = [coder_prompt(prob, self.plan_for_coder(s.completion.text)) for prob, s in flat_plans]
        programs: list[Sample] = []
        futures = []
        for chunk in self.sample("coder", coder_prompts, n_programs):
            start = len(programs) // n_programs
            for group in chunk:
                programs.extend(group)
            items = [
                (flat_plans[start + i][0], program_for(flat_plans[start + i][0], s.completion.text))
                for i, group in enumerate(chunk)
                for s in group
            ]
            futures.append(self.submit(items))
        return programs, futures

    def reference_likelihoods(self, flat_plans: list[tuple[Problem, Sample]]) -> dict[int, float]:
        """``planner_reward.coder_likelihood``: for each plan (by position) whose problem has a reference solution,
        the Coder's mean per-token log-probability of that solution, written as the Coder's SFT rows write it, given
        the problem and the plan as the Coder is handed it. The Coder's sampling copy scores it (no gradient)."""
        self.activate("coder")
        r = self.roles["coder"]
        model = self.samplers["coder"] if "coder" in self.samplers else self.acc.unwrap_model(r.model)
        scored = [(i, prob, s) for i, (prob, s) in enumerate(flat_plans) if prob.reference_solution]
        rows = [
            (coder_prompt(prob, self.plan_for_coder(s.completion.text)), format_code(prob.reference_solution))
            for _, prob, s in scored
        ]
        values = completion_logprob_means(model, r.tokenizer, rows, self.chat["coder"], self.cfg.micro_batch_size)
        return {i: float(v) for (i, _, _), v in zip(scored, values, strict=True)}

    def insert_gold_plans(self, problems: Sequence[Problem], plans: list[list[Sample]]) -> list[Sample]:
        """``grpo.team.gold_plans``: in place, the last ``gold_plans`` samples of each problem's group become its gold
        plan where it has one that fits the Planner's token budget. Returns the inserted samples (off-policy: left out
        of the Planner's sampling metrics)."""
        inserted = []
        for problem, group in zip(problems, plans):
            gold = self.gold_plan_sample(problem)
            if gold is None:
                continue
            for j in range(len(group) - self.cfg.gold_plans, len(group)):
                group[j] = copy.copy(gold)
                inserted.append(group[j])
        return inserted

    def gold_plan_sample(self, problem: Problem) -> Sample | None:
        """``problem``'s gold plan as a Planner completion, tokenized as its SFT row is (the prompt as the sampler
        feeds it, then the plan in tags and the end token), or None: no gold plan, or longer than the Planner may
        write."""
        if not problem.plan:
            return None
        r = self.roles["planner"]
        row = sft_example(r.tokenizer, planner_prompt(problem), format_plan(problem.plan), self.chat["planner"])
        start = row["completion_mask"].index(1)
        ids = row["input_ids"][start:]
        if len(ids) > r.max_new_tokens:
            return None
        text = r.tokenizer.decode(ids, skip_special_tokens=True)
        return Sample(row["input_ids"][:start], Completion(text, len(ids), ids, "stop"))

    def efficiency_term_shares(
        self,
        problems: list[Problem],
        results: list,
        refs: dict,
        adherence: list[float],
        rewards: torch.Tensor,
    ) -> dict[str, float]:
        """For each efficiency term of the Coder's reward that is on (``time``, ``memory``): the share of the Coder's
        groups (all processes') whose advantages the term changes, ``coder/<term>_term_groups_frac``. A term can only
        act where two programs of a plan both pass and it ranks them differently from the other terms, so a share
        near 0 says the term has nothing to rank in this data, whatever its weight."""
        weights, out = self.cfg.coder_reward, {}
        for term in ("time", "memory"):
            if not getattr(weights, term):
                continue
            without = coder_rewards_of(problems, results, refs, adherence, weights.model_copy(update={term: 0.0}))
            changed = groups_changed(rewards, without, self.cfg.num_programs, self.cfg.scale_rewards)
            out[f"coder/{term}_term_groups_frac"] = float(self.gather(changed.float()).mean())
        return out

    def sample_entropy(self, role: str, samples: list[Sample]) -> float:
        """Mean per-token entropy of ``role``'s policy over its sampled completions, at the rollout temperature (all
        processes' mean), measured on the model that sampled them."""
        self.activate(role)
        r = self.roles[role]
        model = self.samplers[role] if role in self.samplers else self.acc.unwrap_model(r.model)
        value = mean_token_entropy(
            model, samples, r.tokenizer.pad_token_id, self.cfg.micro_batch_size, self.cfg.role_model(role).temperature
        )
        return float(self.gather(torch.tensor([value])).mean())

    def collaboration_gain(self, problems: Sequence[Problem] | None = None) -> dict[str, float]:
        """Coder pass rate with the Planner's (greedy) plan minus without a plan, on the same problems (greedy)."""
        problems = list(self.val_problems if problems is None else problems)
        if not problems:
            return {}
        with torch.random.fork_rng(devices=[]):  # greedy decoding; keep the training RNG stream untouched anyway
            plans = [
                group[0]
                for chunk in self.sample("planner", [planner_prompt(x) for x in problems], 1, greedy=True)
                for group in chunk
            ]
            with_plan = [coder_prompt(x, self.plan_for_coder(s.completion.text)) for x, s in zip(problems, plans)]
            without = [coder_prompt(x, None) for x in problems]
            codes = [group[0] for chunk in self.sample("coder", with_plan + without, 1, greedy=True) for group in chunk]
        items = [(x, program_for(x, s.completion.text)) for x, s in zip(problems + problems, codes)]
        results = self.submit(items).result()
        n = len(problems)
        ok = [float(r is not None and r.passed) for r in results]
        with_rate, without_rate = sum(ok[:n]) / n, sum(ok[n:]) / n
        return {
            "eval/pass_rate_with_plan": with_rate,
            "eval/pass_rate_without_plan": without_rate,
            "eval/collaboration_gain": with_rate - without_rate,
        }

    evaluate = collaboration_gain


# ---------------------------------------------------------------------------------------------------------------------
# MAGRPO: helper + main write one program together; one shared tiered reward; joint group-relative advantages.


class MAGRPOTrainer(_TwoRoleTrainer):
    """MAGRPO (helper/main): the helper samples G completions per problem; the main agent writes one entry point for
    each, seeing that helper's code (``agents.prompts.main_prompt``). Each (helper, main) pair is one joint action,
    scored once with the shared tiered reward; both agents get the pair's group-relative advantage (groups of G)."""

    role_names = ("helper", "main")

    def __init__(
        self,
        params: MAGRPOParams,
        helper,
        main,
        train_problems,
        sandbox,
        seed=0,
        val_problems=(),
        accelerator=None,
        chat: bool | None = None,
    ):
        super().__init__(
            params,
            {"helper": helper, "main": main},
            train_problems,
            sandbox,
            seed,
            val_problems,
            accelerator,
            {"helper": params.max_helper_tokens, "main": params.max_main_tokens},
            {"helper": params.helper_device, "main": params.main_device},
            chat,
        )

    def play(self, problems: list[Problem], group_size: int, greedy: bool = False):
        """Sample G helpers per problem, one main per helper; returns samples and (problem, helper, main, program)."""
        helpers = [
            s
            for chunk in self.sample("helper", [helper_prompt(x) for x in problems], group_size, greedy)
            for group in chunk
            for s in group
        ]
        owners = [x for x in problems for _ in range(group_size)]
        helper_codes = [extract_code(h.completion.text, None).value for h in helpers]
        main_prompts = [main_prompt(x, code) for x, code in zip(owners, helper_codes)]
        mains = [group[0] for chunk in self.sample("main", main_prompts, 1, greedy) for group in chunk]
        joint = []
        for prob, helper_code, main in zip(owners, helper_codes, mains):
            main_code = extract_code(main.completion.text, prob).value
            program = build_program(prob, f"{helper_code}\n\n\n{main_code}") if helper_code and main_code else None
            joint.append((prob, helper_code, main_code, program))
        return helpers, mains, joint

    def rollout(self, problems, timer):
        group_size = self.cfg.num_generations
        t = time.perf_counter()
        helpers, mains, joint = self.play(problems, group_size)
        timer["generation_s"] = time.perf_counter() - t
        results = self.wait([self.submit([(prob, program) for prob, _, _, program in joint])], timer)
        rewards = torch.tensor(
            [
                magrpo_reward(prob, helper_code, main_code, res, self.cfg.reward)
                for (prob, helper_code, main_code, _), res in zip(joint, results)
            ]
        )
        adv, zero = group_advantages(rewards, group_size, self.cfg.scale_rewards)
        passed = torch.tensor([float(r is not None and r.passed) for r in results])
        metrics = {
            "reward/joint": float(self.gather(rewards).mean()),
            "pass_rate/joint": float(self.gather(passed).mean()),
            "joint/adv_std": float(adv.std()),
            "joint/zero_std_frac": float(zero.view(-1, group_size)[:, 0].float().mean()),
        }
        metrics.update(_stats("helper/completion_len", torch.tensor([s.completion.num_tokens for s in helpers])))
        metrics.update(_stats("main/completion_len", torch.tensor([s.completion.num_tokens for s in mains])))
        return {"helper": (helpers, adv), "main": (mains, adv)}, metrics

    def evaluate(self) -> dict[str, float]:
        if not self.val_problems:
            return {}
        with torch.random.fork_rng(devices=[]):
            _, _, joint = self.play(self.val_problems, 1, greedy=True)
        results = self.submit([(prob, program) for prob, _, _, program in joint]).result()
        return {"eval/pass_rate_joint": sum(float(r is not None and r.passed) for r in results) / len(joint)}


# ---------------------------------------------------------------------------------------------------------------------
# Entry points


def load_role_model(path: str, dtype: torch.dtype = torch.float32, *, attn_implementation=None, key: str = ""):
    """A role's model (on the CPU; the trainer places it) + tokenizer, through ``corecode.models.factory`` (a
    checkpoint dir, hub id, pointer or LoRA adapter dir). fp32 unless the trainer asks for a bf16 frozen base (LoRA
    under ``bf16``); ``key`` is the params key named when the source cannot be loaded."""
    from corecode.models.factory import load_model, load_tokenizer

    key = key or "role model"
    model = load_model(path, dtype, "cpu", attn_implementation=attn_implementation, key=key)
    return model, load_tokenizer(path, key=key)


def _weight_dtype(cfg: TwoRoleGRPOParams, role: str) -> torch.dtype:
    """bf16 for a frozen base under a LoRA adapter with ``bf16``; fp32 master weights otherwise."""
    return torch.bfloat16 if cfg.bf16 and cfg.role_model(role).lora.enabled else torch.float32


def _load_roles(cfg: TwoRoleGRPOParams, names: tuple[str, str], starts: tuple[str, str], keys: list[str]):
    """The two roles' (model, tokenizer): separate models, or one shared base. A shared base whose starts are both
    LoRA adapter directories (``sft.lora.merge: false``) is that base loaded once, each role's adapter trainable on
    it; otherwise the first start is the base and the trainer adds fresh adapters."""
    from corecode.models.factory import ModelSourceError, adapter_base, load_tokenizer, resolve_source
    from corecode.models.lora import load_role_model as load_with_adapter

    dtype = {name: _weight_dtype(cfg, name) for name in names}
    bases = [adapter_base(start) for start in starts]
    if not (cfg.shared_base and all(bases)):
        first = load_role_model(
            starts[0], dtype[names[0]], attn_implementation=cfg.role_model(names[0]).attn_implementation, key=keys[0]
        )
        if cfg.shared_base:
            return first, first
        return first, load_role_model(
            starts[1], dtype[names[1]], attn_implementation=cfg.role_model(names[1]).attn_implementation, key=keys[1]
        )
    if resolve_source(bases[0]) != resolve_source(bases[1]):
        raise ModelSourceError(
            f"{keys[0]}, {keys[1]}: shared_base needs both adapters on one base, got {bases[0]!r} and {bases[1]!r}"
        )
    if any(cfg.role_model(name).beta for name in names):
        raise ModelSourceError(
            f"{keys[0].rsplit('.', 1)[0]}.beta: with SFT adapters on a shared base the KL reference (adapters off) "
            "would be the base before SFT; set beta: 0, or sft.lora.merge: true to start from merged checkpoints"
        )
    model = load_with_adapter(
        bases[0],
        starts[0],
        dtype=dtype[names[0]],
        device="cpu",
        trainable=True,
        adapter_name=names[0],
        attn_implementation=cfg.attn_implementation,
    )
    model.load_adapter(starts[1], adapter_name=names[1], is_trainable=True)
    shared = (model, load_tokenizer(starts[0], key=keys[0]))
    return shared, shared


def _check_fits(cfg: TwoRoleGRPOParams, names: tuple[str, str], starts: tuple[str, str], section: str) -> None:
    """Stop before loading when the roles' weights and optimizer state cannot fit the GPU (CUDA only)."""
    from corecode.models.memory import check_fits_gpu, parameter_counts, role_bytes, training_bytes

    trained = {name: name not in cfg.frozen_roles for name in names}
    if cfg.shared_base:
        n_params, _ = parameter_counts(starts[0])
        n_lora = sum(parameter_counts(starts[0], cfg.role_model(n).lora)[1] for n in names if trained[n])
        need = training_bytes(n_params, 2 if cfg.bf16 else 4, n_lora)
    else:
        need = sum(
            role_bytes(
                start,
                cfg.role_model(name).lora,
                _weight_dtype(cfg, name),
                sampler=cfg.bf16 and not cfg.role_model(name).lora.enabled,
                trained=trained[name],
            )
            for name, start in zip(names, starts)
        )
    check_fits_gpu(
        need,
        f"{section} with {starts[0]} and {starts[1]}",
        f"set {section}.lora.enabled: true and {section}.bf16: true (a bf16 base per role, fp32 adapters), "
        f"{section}.shared_base: true (one base for both roles), or apply a smaller profile (`corecode profile list`)",
    )


def _run(
    trainer_cls: type[_TwoRoleTrainer],
    cfg: TwoRoleGRPOParams,
    starts: tuple[str, str],
    outputs: tuple[str, str],
    params,
    train_problems=None,
    val_problems=None,
    sandbox=None,
    progress=True,
    save=True,
) -> dict[str, float]:
    """Load the two roles' start checkpoints, train from the last checkpoint (if any), save both roles (unless not
    ``save``: timing runs, benchmarks/team_timing.py). With several processes per host each takes its share of the
    cores (torch threads, sandbox workers: ``data_parallel.take_host_share``)."""
    from transformers import set_seed

    from corecode.models.factory import check_source
    from corecode.sandbox import Sandbox

    set_seed(params.seed)
    train_problems = train_problems if train_problems is not None else read_problems(cfg.train_problems)
    if val_problems is None:
        val_problems = read_problems(cfg.val_problems) if cfg.eval_problems and Path(cfg.val_problems).exists() else []
    names = trainer_cls.role_names
    section = "grpo.team" if trainer_cls is TeamGRPOTrainer else "grpo.magrpo"
    keys = [f"{section}.{name}_model" for name in names]
    for start, key in zip(starts, keys):
        check_source(start, key, hint=" (run `corecode sft` for this role first)")
    _check_fits(cfg, names, starts, section)
    first, second = _load_roles(cfg, names, starts, keys)
    own_sandbox = sandbox is None
    if cfg.pin_cores and (cores := pin_to_own_cores()):  # before the sandbox forks its workers: they inherit them
        logger.info("this rank runs on cores %s", cores)
    sandbox = sandbox or Sandbox(take_host_share(params.sandbox))
    chat = params.generation.use_chat_template  # prompts rendered as evaluation renders them
    trainer = trainer_cls(cfg, first, second, train_problems, sandbox, params.seed, val_problems, chat=chat)
    try:
        fingerprint = run_fingerprint(cfg.model_dump(mode="json"), params.seed, list(starts))
        if claim_checkpoint_dir(cfg.checkpoint_dir, fingerprint):
            trainer.resume()
        final = trainer.train(progress=progress)
        if save:
            trainer.save_models(dict(zip(trainer_cls.role_names, outputs)))
    finally:
        trainer.close()
        if own_sandbox and hasattr(sandbox, "close"):
            sandbox.close()
    return final


def run_team_grpo(params, **kw) -> dict[str, float]:
    """Train the Planner -> Coder team from ``params.grpo.team`` (``params``: a ``corecode.config.Params``); returns
    the final evaluation metrics (Collaboration Gain). Resumes from ``checkpoint_dir`` when a checkpoint is there."""
    cfg = params.grpo.team
    return _run(
        TeamGRPOTrainer, cfg, (cfg.planner_model, cfg.coder_model), (cfg.planner_output, cfg.coder_output), params, **kw
    )


def run_magrpo(params, **kw) -> dict[str, float]:
    """MAGRPO helper/main training from ``params.grpo.magrpo``; resumes like :func:`run_team_grpo`."""
    cfg = params.grpo.magrpo
    return _run(
        MAGRPOTrainer, cfg, (cfg.helper_model, cfg.main_model), (cfg.helper_output, cfg.main_output), params, **kw
    )
