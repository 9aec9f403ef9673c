package rayon.yarn;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.server.nodemanager.DefaultContainerExecutor;
import org.apache.hadoop.yarn.server.nodemanager.NodeManager;

/**
 * A real NodeManager in a JVM of its own (its web app would take over the RM's in one JVM), registered with the RM
 * at {@code --tracker HOST:PORT}: DefaultContainerExecutor (no native executor), loopback ports only, its
 * directories under {@code --work-dir}, {@code --memory-mb} and {@code --vcores} to offer.
 *
 * <p>Prints {@code NM node=HOST:PORT} once registered; stops when standard input ends.
 */
public final class NmDriver {
  private NmDriver() {
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> options = RmDriver.options(args);
    NodeManager nm = new NodeManager();
    nm.init(configuration(options));
    nm.start();  // registers with the RM before it returns
    try {
      System.out.println("NM node=" + nm.getNMContext().getNodeId());
      System.out.flush();
      BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
      while (in.readLine() != null) {
        continue;  // nothing to do but run containers until the caller closes standard input
      }
    } finally {
      nm.stop();
    }
  }

  static Configuration configuration(Map<String, String> options) {
    YarnConfiguration conf = new YarnConfiguration();
    String work = options.get("work-dir");
    conf.set(YarnConfiguration.RM_RESOURCE_TRACKER_ADDRESS, required(options, "tracker"));
    conf.set(YarnConfiguration.NM_ADDRESS, "127.0.0.1:0");
    conf.set(YarnConfiguration.NM_LOCALIZER_ADDRESS, "127.0.0.1:0");
    conf.set(YarnConfiguration.NM_WEBAPP_ADDRESS, "127.0.0.1:0");
    conf.set(YarnConfiguration.NM_BIND_HOST, "127.0.0.1");
    conf.set(YarnConfiguration.NM_LOCAL_DIRS, new File(work, "local").getAbsolutePath());
    conf.set(YarnConfiguration.NM_LOG_DIRS, new File(work, "logs").getAbsolutePath());
    conf.set(YarnConfiguration.NM_REMOTE_APP_LOG_DIR, new File(work, "remote-logs").getAbsolutePath());
    conf.set("hadoop.tmp.dir", work);
    conf.setClass(YarnConfiguration.NM_CONTAINER_EXECUTOR, DefaultContainerExecutor.class, Object.class);
    conf.setLong(YarnConfiguration.NM_PMEM_MB, Long.parseLong(options.get("memory-mb")));
    conf.setInt(YarnConfiguration.NM_VCORES, Integer.parseInt(options.get("vcores")));
    conf.setBoolean(YarnConfiguration.NM_ENABLE_HARDWARE_CAPABILITY_DETECTION, false);
    // the containers are small JVMs and `sleep`: no memory checks, no monitor (the machine is shared)
    conf.setBoolean(YarnConfiguration.NM_PMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_VMEM_CHECK_ENABLED, false);
    conf.setBoolean(YarnConfiguration.NM_CONTAINER_MONITOR_ENABLED, false);
    // a full shared disk must not mark the node unhealthy
    conf.setFloat(YarnConfiguration.NM_MAX_PER_DISK_UTILIZATION_PERCENTAGE, 100.0f);
    conf.setLong(YarnConfiguration.DEBUG_NM_DELETE_DELAY_SEC, 0);
    return conf;
  }

  private static String required(Map<String, String> options, String key) {
    String value = options.get(key);
    if (value == null || value.isEmpty()) {
      throw new IllegalArgumentException("--" + key + " is required");
    }
    return value;
  }
}
