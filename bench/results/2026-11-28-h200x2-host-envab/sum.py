import json,glob,collections,re,sys
d0=sys.argv[1]; A=sys.argv[2]; B=sys.argv[3]
rows=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(d0+'/hostcmp/jccl-envab-*.json')):
    m=re.match(r'.*jccl-envab-(\w+)-(k\w+)-(small|large)-(\d)-r(\d+)\.json',f)
    coll,tag,rng,rep,n=m.groups()
    for run in json.load(open(f))['runs']:
        for r in run['rows']:
            rows[(int(n),coll,r['bytes'])][tag].append((r['oop']['time_us'],r['ip']['time_us']))
print(f"{'ranks':>5} {'coll':10} {'bytes':>9} | {A+' oop':>14} {B+' oop':>14} {'ratio':>6} | {A+' ip':>14} {B+' ip':>14} {'ratio':>6}")
for k in sorted(rows):
    a=rows[k][A]; b=rows[k][B]
    if not a or not b: continue
    f=lambda v:'/'.join(f"{x:.2f}" if x<100 else f"{x:.0f}" for x in v)
    ao=[x[0] for x in a]; bo=[x[0] for x in b]; ai=[x[1] for x in a]; bi=[x[1] for x in b]
    print(f"{k[0]:>5} {k[1]:10} {k[2]:>9} | {f(ao):>14} {f(bo):>14} {min(ao)/min(bo):6.2f} | {f(ai):>14} {f(bi):>14} {min(ai)/min(bi):6.2f}")
