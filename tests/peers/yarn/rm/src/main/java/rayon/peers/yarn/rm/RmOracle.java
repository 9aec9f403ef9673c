package rayon.peers.yarn.rm;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.Collections;
import java.util.Locale;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.net.NetUtils;
import org.apache.hadoop.yarn.api.records.NodeId;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.conf.YarnConfiguration;
import org.apache.hadoop.yarn.exceptions.YarnException;
import org.apache.hadoop.yarn.server.MiniYARNCluster;
import org.apache.hadoop.yarn.server.api.protocolrecords.RegisterNodeManagerRequest;
import org.apache.hadoop.yarn.server.resourcemanager.ResourceManager;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.Plan;
import org.apache.hadoop.yarn.server.resourcemanager.reservation.ReservationSystem;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.ResourceScheduler;
import org.apache.hadoop.yarn.server.resourcemanager.scheduler.capacity.CapacityScheduler;
import org.apache.hadoop.yarn.util.YarnVersionInfo;
import org.apache.hadoop.yarn.webapp.util.WebAppUtils;

/**
 * A real YARN ResourceManager on loopback, for the conformance script of our YARN REST dialect.
 *
 * <p>One MiniYARNCluster: the CapacityScheduler with the reservation system on, a reservable queue
 * {@code dedicated} holding all of the cluster, and a queue {@code default} holding none of it
 * (YARN's list defaults to it, and it is not reservable). Once the reservable plan has capacity it
 * prints one line to standard output,
 *
 * <pre>RM web=http://127.0.0.1:PORT queue=dedicated memory=MB vcores=N step=MS</pre>
 *
 * and serves until standard input closes (or it is killed). Every web request runs as the user
 * named by {@code --user} (Hadoop's static web user: simple authentication without a name parameter).
 */
public final class RmOracle {
    static final String QUEUE = "dedicated";
    static final long READY_TIMEOUT_MS = 120_000;
    static final long DAY_S = 24 * 3600;

    private RmOracle() {
    }

    public static void main(String[] args) throws Exception {
        Options options = Options.parse(args);
        // No NodeManagers: in one JVM their web app would take over the RM's (Guice's servlet pipeline is
        // static), and each would bring a fixed 4 GiB. One node registers itself instead, with the capacity asked.
        MiniYARNCluster cluster = new MiniYARNCluster("rayon-rm-oracle", 1, 0, 1, 1);
        cluster.init(configuration(options));
        cluster.start();
        try {
            ResourceManager rm = cluster.getResourceManager();
            register(rm, options);
            Plan plan = readyPlan(rm.getRMContext().getReservationSystem());
            Resource capacity = plan.getTotalCapacity();
            // The RM writes the port it bound back into its configuration.
            InetSocketAddress web = NetUtils.createSocketAddr(WebAppUtils.getRMWebAppURLWithoutScheme(rm.getConfig()));
            System.out.printf(Locale.ROOT, "RM web=http://127.0.0.1:%d queue=%s memory=%d vcores=%d step=%d%n",
                    web.getPort(), QUEUE, capacity.getMemorySize(), capacity.getVirtualCores(), plan.getStep());
            System.out.flush();
            drain(System.in);
        } finally {
            cluster.stop();
        }
    }

    /** The cluster's settings: loopback, the CapacityScheduler and its queues, the reservation system. */
    static Configuration configuration(Options options) {
        YarnConfiguration conf = new YarnConfiguration();
        conf.setClass(YarnConfiguration.RM_SCHEDULER, CapacityScheduler.class, ResourceScheduler.class);
        conf.setBoolean(YarnConfiguration.RM_RESERVATION_SYSTEM_ENABLE, true);
        conf.setLong(YarnConfiguration.RM_RESERVATION_SYSTEM_PLAN_FOLLOWER_TIME_STEP, options.stepMs);
        String root = "yarn.scheduler.capacity.root";
        conf.set(root + ".queues", "default," + QUEUE);
        conf.set(root + ".default.capacity", "0");
        conf.set(root + ".default.maximum-capacity", "100");
        conf.set(root + "." + QUEUE + ".capacity", "100");
        conf.setBoolean(root + "." + QUEUE + ".reservable", true);
        // The node never heartbeats: it must not expire while the RM serves.
        // (a day; the RM wants its token keys to roll less often than every three expiry intervals)
        conf.setLong(YarnConfiguration.RM_NM_EXPIRY_INTERVAL_MS, DAY_S * 1000);
        conf.setLong(YarnConfiguration.RM_NMTOKEN_MASTER_KEY_ROLLING_INTERVAL_SECS, 4 * DAY_S);
        conf.setLong(YarnConfiguration.RM_CONTAINER_TOKEN_MASTER_KEY_ROLLING_INTERVAL_SECS, 4 * DAY_S);
        // Loopback only, on free ports; MiniYARNCluster puts the RM's other addresses on this host at port 0.
        conf.set(YarnConfiguration.RM_BIND_HOST, "127.0.0.1");
        conf.set("hadoop.http.staticuser.user", options.user);
        conf.set("hadoop.tmp.dir", options.workDir);
        return conf;
    }

    /** One node of the asked capacity, registered straight with the RM's resource tracker (no RPC). */
    static void register(ResourceManager rm, Options options) throws YarnException, IOException {
        RegisterNodeManagerRequest request = RegisterNodeManagerRequest.newInstance(
                NodeId.newInstance("127.0.0.1", 1), 0, Resource.newInstance(options.memoryMb, options.vcores),
                YarnVersionInfo.getVersion(), Collections.emptyList(), Collections.emptyList());
        rm.getResourceTrackerService().registerNodeManager(request);
    }

    /** The reservable queue's plan once the nodes have given it capacity. */
    static Plan readyPlan(ReservationSystem system) throws InterruptedException {
        long until = System.currentTimeMillis() + READY_TIMEOUT_MS;
        while (System.currentTimeMillis() < until) {
            Plan plan = system == null ? null : system.getPlan(QUEUE);
            if (plan != null && plan.getTotalCapacity().getMemorySize() > 0) {
                return plan;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the reservable queue `" + QUEUE + "` got no capacity within "
                + READY_TIMEOUT_MS / 1000 + " s (is the reservation system on?)");
    }

    /** Reads standard input to its end: the parent holds it open for as long as it wants the RM. */
    static void drain(InputStream in) throws IOException {
        byte[] buffer = new byte[256];
        while (in.read(buffer) != -1) {
            // nothing to do with the bytes
        }
    }

    /** Command-line options: {@code --memory-mb MB --vcores N --step-ms MS --user NAME --work-dir DIR}. */
    record Options(long memoryMb, int vcores, long stepMs, String user, String workDir) {
        static Options parse(String[] args) {
            long memory = 8192;
            int vcores = 8;
            long step = 1000;
            String user = "alice";
            String work = System.getProperty("java.io.tmpdir") + "/rayon-rm-oracle";
            for (int i = 0; i + 1 < args.length; i += 2) {
                switch (args[i]) {
                    case "--memory-mb" -> memory = Long.parseLong(args[i + 1]);
                    case "--vcores" -> vcores = Integer.parseInt(args[i + 1]);
                    case "--step-ms" -> step = Long.parseLong(args[i + 1]);
                    case "--user" -> user = args[i + 1];
                    case "--work-dir" -> work = args[i + 1];
                    default -> throw new IllegalArgumentException("unknown option " + args[i]
                            + "; expected --memory-mb, --vcores, --step-ms, --user or --work-dir");
                }
            }
            if (args.length % 2 != 0) {
                throw new IllegalArgumentException("option " + args[args.length - 1] + " needs a value");
            }
            return new Options(memory, vcores, step, user, work);
        }
    }
}
