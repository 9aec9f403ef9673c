package rayon.yarn;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.hadoop.yarn.api.records.Container;
import org.apache.hadoop.yarn.api.records.ContainerLaunchContext;
import org.apache.hadoop.yarn.api.records.ContainerStatus;
import org.apache.hadoop.yarn.api.records.FinalApplicationStatus;
import org.apache.hadoop.yarn.api.records.Priority;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.api.AMRMClient;
import org.apache.hadoop.yarn.client.api.AMRMClient.ContainerRequest;
import org.apache.hadoop.yarn.client.api.NMClient;
import org.apache.hadoop.yarn.conf.YarnConfiguration;

/**
 * A small ApplicationMaster of ours, run by the NodeManager in its AM container: it registers with the RM at
 * {@code args[0]} (the scheduler's address), asks for one task container of {@code args[1]} MB and {@code args[2]}
 * vcores, runs {@code sleep args[3]} in it on its node, waits for it to end and finishes SUCCEEDED (FAILED if the
 * task failed or never came within {@code args[4]} seconds). Its AMRM token comes from the container's token file.
 */
public final class TinyMaster {
  private TinyMaster() {
  }

  public static void main(String[] args) throws Exception {
    YarnConfiguration conf = new YarnConfiguration();
    conf.set(YarnConfiguration.RM_SCHEDULER_ADDRESS, args[0]);
    Resource task = Resource.newInstance(Long.parseLong(args[1]), Integer.parseInt(args[2]));
    String seconds = args[3];
    long until = System.currentTimeMillis() + Long.parseLong(args[4]) * 1000;
    AMRMClient<ContainerRequest> rm = AMRMClient.createAMRMClient();
    rm.init(conf);
    rm.start();
    NMClient nm = NMClient.createNMClient();
    nm.init(conf);
    nm.start();
    FinalApplicationStatus status = FinalApplicationStatus.FAILED;
    String message = "the task container did not come";
    try {
      rm.registerApplicationMaster("localhost", 0, "");
      rm.addContainerRequest(new ContainerRequest(task, null, null, Priority.newInstance(1)));
      List<Container> given = new ArrayList<>();
      List<ContainerStatus> ended = new ArrayList<>();
      while (ended.isEmpty() && System.currentTimeMillis() < until) {
        var response = rm.allocate(0.5f);
        for (Container container : response.getAllocatedContainers()) {
          if (given.isEmpty()) {
            System.out.println("task container " + container.getId() + " on " + container.getNodeId());
            nm.startContainer(container, ContainerLaunchContext.newInstance(Collections.emptyMap(),
                Collections.emptyMap(), List.of("sleep " + seconds), null, null, null));
            rm.removeContainerRequest(new ContainerRequest(task, null, null, Priority.newInstance(1)));
            given.add(container);
          } else {
            rm.releaseAssignedContainer(container.getId());
          }
        }
        ended.addAll(response.getCompletedContainersStatuses());
        Thread.sleep(250);
      }
      if (!ended.isEmpty()) {
        ContainerStatus last = ended.get(0);
        status = last.getExitStatus() == 0 ? FinalApplicationStatus.SUCCEEDED : FinalApplicationStatus.FAILED;
        message = "the task container ended with exit status " + last.getExitStatus() + ": "
            + last.getDiagnostics();
      }
      System.out.println(message);
      rm.unregisterApplicationMaster(status, message, "");
    } finally {
      nm.stop();
      rm.stop();
    }
  }
}
