#!/usr/bin/env bash
# The fine-tuning runs whose figures the project reports, on the shared data
# only (../shared/data): each holds out 10% of the train file (seeded) as its
# evaluation set, since dev/test sets are kept apart. Results land in
# runs/<name>/metrics.json. On 2 CPU cores: MRPC ~10 min, SST-2 (10k
# examples) ~15 min, NCBI-disease ~20 min, SQuAD sample ~30 min, COVID-QA ~1 h.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${KERAS_BERT_ZOO_SHARED_DATA:-../shared/data}
BIN=.venv/bin
PRESET=${PRESET:-minilm_l6_h384_en_uncased}

$BIN/keras-bert-zoo finetune --task classify --preset "$PRESET" --train_file "$DATA/glue/MRPC/train.tsv" \
  --output_dir runs/mrpc --num_train_epochs 3 --train_batch_size 32 --learning_rate 5e-5 --max_seq_length 128

$BIN/keras-bert-zoo finetune --task classify --preset "$PRESET" --train_file "$DATA/glue/SST-2/train.tsv" \
  --output_dir runs/sst2 --num_train_epochs 3 --train_batch_size 32 --learning_rate 5e-5 --max_seq_length 64 --max_train_examples 10000

$BIN/keras-bert-zoo finetune --task ner --preset "$PRESET" --train_file "$DATA/ner/NCBI-disease/train.tsv" \
  --output_dir runs/ncbi --num_train_epochs 3 --train_batch_size 32 --learning_rate 1e-4 --max_seq_length 128

# SQuAD sample (articles 0-2 of dev-v1.1): run_squad's 384 / 128 windows.
$BIN/keras-bert-zoo finetune --task qa --preset "$PRESET" --train_file "$DATA/squad/dev-v1.1-sample-articles0-2.json" \
  --output_dir runs/squad --num_train_epochs 2 --train_batch_size 16 --learning_rate 5e-5 --max_seq_length 384 --doc_stride 128

# COVID-QA: ~6,000-piece articles, ~47 windows per question at 256 / 128; 200 questions (~1 h on 2 cores).
$BIN/keras-bert-zoo finetune --task qa --preset "$PRESET" --train_file "$DATA/qa/covid_qa/train_docs0-77.json" \
  --output_dir runs/covidqa --num_train_epochs 2 --train_batch_size 16 --learning_rate 5e-5 --max_seq_length 256 --doc_stride 128 \
  --max_train_examples 200 --seed 0

for run in mrpc sst2 ncbi squad covidqa; do echo "== $run"; cat "runs/$run/metrics.json"; done
