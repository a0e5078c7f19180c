import json, glob, statistics, collections, sys
d = sys.argv[1] if len(sys.argv) > 1 else '/tmp/fcall'
first = collections.defaultdict(dict)  # (build, run) -> {(coll, bytes, place): us}
for f in sorted(glob.glob(d + '/*.json')):
    name = f.split('/')[-1][:-5]
    b, r = name.rsplit('-', 1)
    for run in json.load(open(f))['runs']:
        for row in run['rows']:
            for pl in ('oop', 'ip'):
                v = row.get(pl) or {}
                if v.get('first_us') is not None:
                    first[(b, r)][(row['collective'], row['bytes'], pl)] = v['first_us']
builds = sorted({b for b, _ in first})
colls = sorted({k[0] for m in first.values() for k in m})
print('first calls after the warm-up, us: per collective, the sum over sizes and placements (median over runs [min-max]); over 1 ms: calls')
print('collective ' + ' '.join('%-28s' % b for b in builds))
tot = {b: [] for b in builds}
for c in colls:
    cells = []
    for b in builds:
        sums, slow = [], []
        for (bb, r), m in first.items():
            if bb != b:
                continue
            vals = [v for k, v in m.items() if k[0] == c]
            sums.append(sum(vals))
            slow.append(sum(1 for v in vals if v > 1000))
        cells.append('%8.0f [%6.0f-%6.0f] %2d' % (statistics.median(sums), min(sums), max(sums), statistics.median(slow)))
    print('%-10s ' % c + ' '.join('%-28s' % x for x in cells))
for b in builds:
    runs = [sum(m.values()) for (bb, r), m in first.items() if bb == b]
    print('%s: all collectives, sum per run: %s us' % (b, ', '.join('%.0f' % x for x in sorted(runs))))
