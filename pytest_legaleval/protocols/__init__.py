"""The benchmark protocols' texts that a benchmark's importer and its grader both read.

A benchmark protocol (``grading.protocols``; the official ones in ``grading/official/``)
owns how its records are prompted and scored. Some of that the importer needs too: LEXam's
answering prompts, which the importer writes into the records and the protocol's judge
reads the bare question back out of; APEX's response-generation prompt; PRBench's rule for
a criterion's weight. The importers and grading are siblings that never import each other
(DESIGN §11), so these texts sit one layer below both, one module per benchmark
(:mod:`.lexam`, :mod:`.prbench`, :mod:`.apex`), and each protocol module in
``grading/official/`` re-exports its own. Nothing here imports anything of ours.

The texts are data copied byte for byte from the upstream repositories at the commits each
module names (the tests pin them); the code around them is ours.
"""
