import json,glob,re,collections,sys
d=sys.argv[1]
res=collections.defaultdict(list)
for f in glob.glob(d+'/jccl-envab-*.json'):
    m=re.search(r'jccl-envab-(\w+)-(\w+)-s-(\d)-r(\d+)\.json',f)
    c,tag,rep,n=m.groups()
    for run in json.load(open(f))['runs']:
        for row in run['rows']:
            res[(c,int(n),row['bytes'],tag)].append((row['oop']['time_us'],row['ip']['time_us']))
mpi={}
for f in glob.glob(d+'/mpi-envab-*.json'):
    for run in json.load(open(f))['runs']:
        for row in run['rows']:
            k=(row['collective'],run['ranks'] if 'ranks' in run else row['ranks'],row['bytes'])
            t=row['oop']['time_us']
            mpi[k]=min(mpi.get(k,1e9),t)
keys=sorted(set(k[:3] for k in res))
for k in keys:
    tags=[t for (c,n,b,t) in res if (c,n,b)==k]
    base=min(min(x) for x in res[k+('base',)])
    s=f"{k[0]:9s} r{k[1]} {k[2]:4d}B mpi {mpi.get(k,float('nan')):.2f} |"
    for t in sorted(tags, key=lambda t:(t!='base',t)):
        v=res[k+(t,)]; best=min(min(x) for x in v)
        s+=f" {t} {best:.2f} ["+", ".join(f"{a:.2f}/{b:.2f}" for a,b in v)+f"] {base/best:.2f}x |"
    print(s)
