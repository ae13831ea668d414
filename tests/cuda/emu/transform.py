# Rewrites kernels/cuda/* for host compilation under emu.h:
#   kernel<T><<<grid, block, smem, stream>>>(args)  ->  vt_emu::Launcher(grid, block, smem, stream)(kernel<T>, args)
#   extern __shared__ float name[];                ->  float* name = vt_emu_smem;
# .cu files become <name>_emu.cpp; headers are copied unchanged.
#   usage: transform.py SRC_DIR DST_DIR
import re, sys, os, glob
src, dst = sys.argv[1], sys.argv[2]
os.makedirs(dst, exist_ok=True)
for f in glob.glob(src + '/*'):
    s = open(f).read()
    s = re.sub(r'extern __shared__ float (\w+)\[\];', r'float* \1 = vt_emu_smem;', s)
    s = re.sub(r'([\w:]+(?:<\w+>)?)<<<(.*?)>>>\(', r'vt_emu::Launcher(\2)(\1, ', s, flags=re.S)
    name = os.path.basename(f)
    if name.endswith('.cu'): name = name[:-3] + '_emu.cpp'
    open(os.path.join(dst, name), 'w').write(s)
