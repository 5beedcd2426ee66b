"""HF transformers' BertModel on torch, its default SDPA attention, eager.

Runs in its own virtualenv (`.venv-torch`, made by `make benchmark`: the CPU
build; on a GPU machine, any torch with CUDA): torch is a benchmark peer,
never a dependency of keras_bert_zoo. On a GPU it runs there, as
TensorFlow's peers do.
"""

import torch

from benchmarks.peers import (LEARNING_RATE, MAX_SEQUENCE_LENGTH, SIZES, TOTAL_STEPS, VOCABULARY_SIZE, masked_positions,
                              token_inputs)


def build_hf_torch(config):
    import transformers

    size = SIZES[config["size"]]
    bert_config = transformers.BertConfig(
        vocab_size=VOCABULARY_SIZE, hidden_size=size["hidden_dim"], num_hidden_layers=size["num_layers"],
        num_attention_heads=size["num_heads"], intermediate_size=size["intermediate_dim"],
        max_position_embeddings=MAX_SEQUENCE_LENGTH, num_labels=2,
    )
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    ids, segments, mask, labels = (torch.from_numpy(a).long().to(device)
                                   for a in token_inputs(config["batch"], config["length"]))
    dtype = getattr(torch, config["dtype"])
    if config["job"] == "inference":
        model = transformers.BertModel(bert_config).eval().to(device, dtype)

        def step():
            with torch.inference_mode():
                # .cpu() waits for the device, as the TensorFlow peers' .numpy() does.
                return model(input_ids=ids, token_type_ids=segments, attention_mask=mask).last_hidden_state.float().cpu()

        return step

    if config["job"] == "pretrain":
        # Masked-LM labels: the original ids at the masked positions, -100 (ignored) elsewhere.
        positions, masked_ids, _ = masked_positions(config["batch"], config["length"])
        targets = torch.full(tuple(mask.shape), -100, dtype=torch.long, device=device)
        targets.scatter_(1, torch.from_numpy(positions).long().to(device), torch.from_numpy(masked_ids).long().to(device))
        model = transformers.BertForPreTraining(bert_config).train()
        arguments = dict(labels=targets, next_sentence_label=labels)
    else:
        model = transformers.BertForSequenceClassification(bert_config).train()
        arguments = dict(labels=labels)
    model.to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE, weight_decay=0.01, eps=1e-6)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, TOTAL_STEPS // 10, TOTAL_STEPS)

    # float16 gradients underflow without loss scaling (Keras' mixed_float16 scales too); a no-op otherwise.
    scaler = torch.amp.GradScaler(device.type, enabled=dtype == torch.float16)

    def step():
        with torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
            loss = model(input_ids=ids, token_type_ids=segments, attention_mask=mask, **arguments).loss
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        schedule.step()
        optimizer.zero_grad()
        return float(loss.detach())

    return step
