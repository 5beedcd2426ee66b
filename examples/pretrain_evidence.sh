#!/usr/bin/env bash
# The pretraining runs whose figures the project reports, on the shared data
# only (../shared/data). Each holds out 10% of the documents (seeded) and
# writes held-out masked-LM / NSP scores before and after to runs/<name>/metrics.json.
# On 2 CPU cores: PubMed ~10 min, WikiText from scratch ~25 min.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${KERAS_BERT_ZOO_SHARED_DATA:-../shared/data}
BIN=.venv/bin

# BioBERT's recipe in small: continue pretraining the offline default preset on PubMed abstracts.
rm -rf runs/pretrain_pubmed
$BIN/keras-bert-zoo pretrain --preset minilm_l6_h384_en_uncased \
  --input_file "$DATA/corpus/pubmed_abstracts/PubMedAbstract_1MB.txt" --corpus_format documents \
  --output_dir runs/pretrain_pubmed --max_seq_length 128 --max_predictions_per_seq 20 --dupe_factor 2 \
  --train_batch_size 32 --num_train_epochs 1 --learning_rate 1e-4 --strategy auto

# SciBERT's recipe in small: a new WordPiece vocabulary learned from the corpus, a fresh model.
rm -rf runs/pretrain_wikitext
cat > runs/small_bert.json <<'JSON'
{"num_layers": 4, "num_heads": 4, "hidden_dim": 256, "intermediate_dim": 1024, "max_sequence_length": 128}
JSON
$BIN/keras-bert-zoo pretrain --config runs/small_bert.json --vocab_from_corpus 8000 \
  --input_file "$DATA/corpus/wikitext-2/valid.txt" --corpus_format wikitext \
  --output_dir runs/pretrain_wikitext --max_seq_length 128 --max_predictions_per_seq 20 --dupe_factor 3 \
  --train_batch_size 32 --num_train_epochs 12 --learning_rate 1e-3 --num_warmup_steps 100 --strategy auto

for run in pretrain_pubmed pretrain_wikitext; do echo "== $run"; cat "runs/$run/metrics.json"; done
