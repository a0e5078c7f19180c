import json,glob,collections,re,sys
d0=sys.argv[1]; tags=sys.argv[2].split(',')
rows=collections.defaultdict(lambda: collections.defaultdict(list))
for f in sorted(glob.glob(d0+'/hostcmp/jccl-envab-*.json')):
    m=re.match(r'.*jccl-envab-(\w+)-(\w+?)-(\w+)-(\d)-r(\d+)\.json',f)
    coll,tag,rng,rep,n=m.groups()
    for run in json.load(open(f))['runs']:
        for r in run['rows']:
            rows[(int(n),coll,r['bytes'])][tag].append(r['oop']['time_us'])
mpi=collections.defaultdict(dict)
for f in glob.glob(d0+'/hostcmp/mpi-envab-*.json'):
    m=re.match(r'.*mpi-envab-(\w+)-r(\d+)\.json',f); cfg,n=m.groups()
    for run in json.load(open(f))['runs']:
        for r in run['rows']:
            mpi[(int(n),r['collective'],r['bytes'])][cfg]=r['oop']['time_us']
print(f"{'n':>3} {'coll':9} {'bytes':>6} | "+" | ".join(f"{t:>13}" for t in tags)+" | mpi def / cma | best-mpi/"+tags[0])
for k in sorted(rows):
    f=lambda v:'/'.join(f"{x:.2f}" if x<100 else f"{x:.0f}" for x in v)
    mm=mpi.get(k,{})
    best=min(mm.values()) if mm else None
    a=min(rows[k][tags[0]]) if rows[k][tags[0]] else None
    print(f"{k[0]:>3} {k[1]:9} {k[2]:>6} | "+" | ".join(f"{f(rows[k][t]):>13}" for t in tags)+f" | {mm.get('default',0):.2f} / {mm.get('cma',0):.2f} | {best/a if best and a else 0:.2f}")
