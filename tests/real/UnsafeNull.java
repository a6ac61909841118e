// Writes through a NULL address with sun.misc.Unsafe (make_real_cores.sh):
// the fault is in the JVM's Unsafe_PutLong under interpreted Java frames,
// and the JVM's handler writes its error file and calls abort().
import java.lang.reflect.Field;

public class UnsafeNull {
  public static void main(String[] args) throws Exception {
    Field field = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
    field.setAccessible(true);
    sun.misc.Unsafe unsafe = (sun.misc.Unsafe) field.get(null);
    unsafe.putLong(0L, 42L);
  }
}
