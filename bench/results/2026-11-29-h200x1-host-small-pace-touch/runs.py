"""Every run of a smallab archive's builds: (collective, ranks, bytes) build#round:out-of-place/in-place us."""
import collections, glob, json, re, sys
res = collections.defaultdict(list)
for f in sorted(glob.glob(sys.argv[1] + '/jccl-small-*.json')):
    c, b, rep, n = re.search(r'jccl-small-(\w+)-(cli(?:-base)?)-(\d)-r(\d+)\.json', f).groups()
    for run in json.load(open(f))['runs']:
        for row in run['rows']:
            res[(c, int(n), row['bytes'])].append((b, rep, row['oop']['time_us'], row['ip']['time_us']))
for k in sorted(res):
    print(k, ' '.join(f"{b}#{r}:{o:.2f}/{i:.2f}" for b, r, o, i in sorted(res[k])))
